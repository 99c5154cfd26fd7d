package csvx

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/fault"
)

// DryRunField is the form field that asks an import to validate only.
const DryRunField = "dry_run"

// Upload is an import's multipart form: the options that precede the
// file, then the file itself, read as a stream.
type Upload struct {
	// File is the "file" part; read it before calling Rest.
	File *multipart.Part
	// Mapping is the parsed "mapping" field (nil when absent).
	Mapping map[string]string
	// DryRun is the "dry_run" field.
	DryRun bool
	mr     *multipart.Reader
}

// ReadUpload reads the form up to the "file" part. The file is streamed,
// never buffered, so "mapping" and "dry_run" must come before it (as curl
// -F and a browser's FormData send them, in the order given); Rest
// refuses them after it. It returns io.EOF when the form has no file,
// an invalid-input fault for a bad mapping or dry_run, and the multipart reader's
// error otherwise.
func ReadUpload(mr *multipart.Reader) (*Upload, error) {
	u := &Upload{mr: mr}
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, err
		}
		switch p.FormName() {
		case FileField:
			u.File = p
			return u, nil
		case MappingField:
			v, err := formValue(p, MappingField)
			if err != nil {
				return nil, err
			}
			if u.Mapping, err = ParseMapping(v); err != nil {
				return nil, err
			}
		case DryRunField:
			v, err := formValue(p, DryRunField)
			if err != nil {
				return nil, err
			}
			if u.DryRun, err = ParseDryRun(v); err != nil {
				return nil, err
			}
		default:
			_ = p.Close()
		}
	}
}

// ParseDryRun reads a dry_run value: true/false (1/0, any case); "" is false.
func ParseDryRun(v string) (bool, error) {
	if strings.TrimSpace(v) == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fault.Invalid(DryRunField, "must be true or false")
	}
	return b, nil
}

// Rest reads what follows the file part: an option there would have come
// too late to apply, so it is an invalid-input fault rather than silently
// ignored. Call it
// after the file was read and before anything is committed.
func (u *Upload) Rest() error {
	for {
		p, err := u.mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if name := p.FormName(); name == MappingField || name == DryRunField {
			return fault.Invalid(name, "must come before the file in the form")
		}
		_ = p.Close()
	}
}

func formValue(p *multipart.Part, field string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(p, MaxMappingBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxMappingBytes {
		return "", fault.Invalid(field, fmt.Sprintf("must be at most %d bytes", MaxMappingBytes))
	}
	return string(b), nil
}
