// Package renderq is the contract between the services that need a PDF or a
// DOCX and the render worker (services/render) that produces it: the job
// type, its content-addressed key, the asynq task that carries it, the Redis
// layout of stored results, and the Client that callers use.
//
// A job is identified by the SHA-256 of exactly what is rendered, so the same
// contract downloaded twice is rendered once: the second download finds the
// stored file, and two concurrent downloads share one asynq task (the task id
// is the key).
package renderq

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/language"
)

// RendererVersion is part of every job key. Bump it whenever the output of
// the worker changes for the same input (CSS, fonts, page setup, DOCX
// writer), so stored results of the old renderer are no longer served.
// A setting that changes the output is not a worker setting: it is a field
// of Job (see Tagged), so the key sees it.
//
// render-4: Tagged moved from the worker's configuration into the job;
// render-3 results were printed with whichever setting the worker had.
// render-5: the document language (Lang) in the PDF's <html lang> and the
// DOCX's core properties and default run language, and the PDF's outline
// with tagging; stored untagged render-4 PDFs are no longer served.
const RendererVersion = "render-5"

// Format is the output format of a job.
type Format string

// The formats the worker renders.
const (
	PDF  Format = "pdf"
	DOCX Format = "docx"
)

// ContentType returns the media type of a rendered file of this format.
func (f Format) ContentType() string {
	switch f {
	case PDF:
		return "application/pdf"
	case DOCX:
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	}
	return "application/octet-stream"
}

// MaxHTMLBytes bounds a job's HTML. Contract content is limited to 100k
// characters by the API; the catalogue and the layout wrapper stay far below
// this, and the bound keeps one job from filling Redis.
const MaxHTMLBytes = 2 << 20

// Job is one document to render.
//
// HTML is a fragment (the content of <body>), already sanitised by the
// caller; the worker sanitises it again. Header and Footer are the three
// cells (left, center, right) of the page header and footer as plain text
// (not HTML: the worker escapes it) with merge tags already resolved; the
// placeholders {{page}} and {{pages}} become the live page number and page
// count.
//
// Tagged asks for a tagged (accessible) PDF; PDF jobs only. It changes the
// bytes, so it is part of the job and its key, and the worker prints what the
// job says: workers configured differently can no longer store different
// files under one key. Client.Render sets it from RENDER_PDF_TAGGED (on by
// default).
//
// Title is the document's title (the PDF's <title>, Info /Title and window
// title; the DOCX's dc:title). Lang is its BCP 47 language (the PDF's
// <html lang>, which a tagged PDF carries as the catalog's /Lang; the DOCX's
// dc:language and default w:lang); Client.Render fills an empty Lang from
// RENDER_DOCUMENT_LANG, so a caller that knows better (a per-template
// language) sets it and nothing else changes.
type Job struct {
	Format Format    `json:"format"`
	Title  string    `json:"title"`
	HTML   string    `json:"html"`
	Header [3]string `json:"header"`
	Footer [3]string `json:"footer"`
	Tagged bool      `json:"tagged,omitempty"`
	Lang   string    `json:"lang,omitempty"`
}

// Validate reports a job the worker would refuse.
func (j Job) Validate() error {
	if j.Format != PDF && j.Format != DOCX {
		return fmt.Errorf("renderq: unknown format %q", j.Format)
	}
	if len(j.HTML) > MaxHTMLBytes {
		return fmt.Errorf("renderq: html is %d bytes, the limit is %d", len(j.HTML), MaxHTMLBytes)
	}
	if j.Tagged && j.Format != PDF {
		return fmt.Errorf("renderq: tagged applies to PDF jobs, not %s", j.Format)
	}
	if j.Lang != "" {
		if _, err := ParseLang(j.Lang); err != nil {
			return err
		}
	}
	return nil
}

// Language is the language the document is written in: Lang, or
// DefaultLang for a job that names none (one submitted without
// Client.Render), so every rendered document declares one.
func (j Job) Language() string {
	if j.Lang == "" {
		return DefaultLang
	}
	return j.Lang
}

// ParseLang checks a document language and returns its canonical BCP 47
// form ("de-at" becomes "de-AT"), so equal languages give equal job keys and
// only a well-formed tag reaches the document's markup.
func ParseLang(s string) (string, error) {
	// language.Parse also takes "en_US"; a tag has letters, digits and
	// hyphens only, at most 35 of them (RFC 5646's minimum support).
	wellFormed := len(s) <= 35 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == ""
	tag, err := language.Parse(s)
	if err != nil || !wellFormed {
		return "", fmt.Errorf("renderq: language %q is not a BCP 47 language tag (such as en or de-AT)", s)
	}
	return tag.String(), nil
}

// Key is the hex SHA-256 of the canonical JSON of the job and the renderer
// version. encoding/json writes struct fields in declaration order and the
// header and footer are fixed-size arrays, so equal jobs give equal keys.
func (j Job) Key() string {
	canon := struct {
		Version string `json:"v"`
		Job
	}{RendererVersion, j}
	b, err := json.Marshal(canon)
	if err != nil {
		// A struct of strings always marshals; keep the signature simple.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Page placeholders in header and footer cells.
const (
	PagePlaceholder  = "{{page}}"
	PagesPlaceholder = "{{pages}}"
)

// SplitPlaceholders splits a header or footer cell into literal text and
// placeholders, in order, so each renderer can map {{page}} and {{pages}} to
// its own live field. Placeholders match case-insensitively and allow spaces
// inside the braces, like merge tags.
func SplitPlaceholders(cell string) []string {
	var parts []string
	for len(cell) > 0 {
		i := strings.Index(cell, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(cell[i:], "}}")
		if j < 0 {
			break
		}
		name := strings.ToLower(strings.TrimSpace(cell[i+2 : i+j]))
		if name != "page" && name != "pages" {
			if i+2 > 0 {
				parts = appendText(parts, cell[:i+2])
			}
			cell = cell[i+2:]
			continue
		}
		parts = appendText(parts, cell[:i])
		parts = append(parts, "{{"+name+"}}")
		cell = cell[i+j+2:]
	}
	return appendText(parts, cell)
}

// appendText appends literal text, merging it with a previous literal.
func appendText(parts []string, s string) []string {
	if s == "" {
		return parts
	}
	if n := len(parts); n > 0 && parts[n-1] != PagePlaceholder && parts[n-1] != PagesPlaceholder {
		parts[n-1] += s
		return parts
	}
	return append(parts, s)
}
