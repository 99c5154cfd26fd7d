package contracts

import (
	"context"
	"regexp"
	"strings"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// TemplateInput is a template body: name and content are required on
// create and update, the optional fields follow the PUT rule (null or ""
// clears to the default).
type TemplateInput = contractsapi.TemplateInput

// prefixPattern keeps contract numbers readable and safe in file names.
var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,19}$`)

// applyTemplate validates in and writes it over t. create sets the
// defaults of the optional fields left out. On update, content equal to
// the stored content is kept as it is: it was checked and sanitised when
// stored, and a PUT that leaves content out sends it (see the edge).
func (s *Service) applyTemplate(in TemplateInput, t *Template, create bool) error {
	var v validate.Errors
	name := strings.TrimSpace(in.Name)
	if v.Required("name", name) {
		v.MaxLen("name", name, validate.MaxName)
	}
	t.Name = name
	if (create || in.Content != t.Content) && v.Required("content", in.Content) &&
		v.MaxLen("content", in.Content, validate.MaxContent) {
		if msg := CheckLengths(in.Content); msg != "" {
			v.Add("content", "%s", msg)
		}
		t.Content = s.sanitizer.HTML(in.Content)
		for _, fe := range s.catalogue.Check("content", t.Content, false) {
			v.Add(fe.Field, "%s", fe.Message)
		}
	}
	if create && !in.NumberPrefix.Set {
		t.NumberPrefix = DefaultPrefix
	}
	if in.NumberPrefix.Set {
		p := strings.TrimSpace(in.NumberPrefix.Value)
		if p == "" {
			p = DefaultPrefix
		}
		if !prefixPattern.MatchString(p) {
			v.Add("number_prefix", "must be 1 to 20 letters, digits, '-' or '_', starting with a letter or digit")
		}
		t.NumberPrefix = p
	}
	if create && !in.DefaultTermMonths.Set {
		t.DefaultTermMonths = DefaultTermMonths
	}
	if in.DefaultTermMonths.Set {
		n := in.DefaultTermMonths.Value
		if in.DefaultTermMonths.Null {
			n = DefaultTermMonths
		}
		if n < 1 || n > MaxTermMonths {
			v.Add("default_term_months", "must be an integer between 1 and %d", MaxTermMonths)
		}
		t.DefaultTermMonths = n
	}
	for _, f := range []struct {
		name string
		in   patch.Field[string]
		dst  *string
	}{
		{"header_left", in.HeaderLeft, &t.HeaderLeft},
		{"header_center", in.HeaderCenter, &t.HeaderCenter},
		{"header_right", in.HeaderRight, &t.HeaderRight},
		{"footer_left", in.FooterLeft, &t.FooterLeft},
		{"footer_center", in.FooterCenter, &t.FooterCenter},
		{"footer_right", in.FooterRight, &t.FooterRight},
	} {
		if !f.in.Set {
			continue
		}
		val := strings.TrimSpace(f.in.Value)
		if !v.MaxLen(f.name, val, validate.MaxString) {
			continue
		}
		for _, fe := range s.catalogue.Check(f.name, val, true) {
			v.Add(fe.Field, "%s", fe.Message)
		}
		*f.dst = val
	}
	return v.Err()
}

// ListTemplates returns every template, by name.
func (s *Service) ListTemplates(ctx context.Context) ([]Template, error) {
	return s.store.ListTemplates(ctx)
}

// GetTemplate returns one template.
func (s *Service) GetTemplate(ctx context.Context, id int64) (Template, error) {
	return s.store.GetTemplate(ctx, id)
}

// CreateTemplate validates, sanitises and stores a template.
func (s *Service) CreateTemplate(ctx context.Context, in TemplateInput, createdBy *int64) (Template, error) {
	t := Template{CreatedBy: createdBy}
	if err := s.applyTemplate(in, &t, true); err != nil {
		return Template{}, err
	}
	return s.store.CreateTemplate(ctx, t)
}

// UpdateTemplate rewrites a template's name and content and the optional
// fields given. Contracts keep
// their generated content until they are regenerated.
func (s *Service) UpdateTemplate(ctx context.Context, id int64, in TemplateInput) (Template, error) {
	t, err := s.store.GetTemplate(ctx, id)
	if err != nil {
		return Template{}, err
	}
	if err := s.applyTemplate(in, &t, false); err != nil {
		return Template{}, err
	}
	return s.store.UpdateTemplate(ctx, t)
}

// DeleteTemplate removes an unused template (409 template_in_use otherwise).
func (s *Service) DeleteTemplate(ctx context.Context, id int64) error {
	return s.store.DeleteTemplate(ctx, id)
}

// ErrTemplateInUse is the answer to deleting a template contracts use.
func ErrTemplateInUse() error {
	return fault.Conflict("template_in_use", "the template is used by contracts and cannot be deleted")
}
