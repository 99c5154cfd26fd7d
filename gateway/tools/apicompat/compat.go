package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// SunsetDays is the deprecation rule's least time (docs/releasing.md) between deprecating something of
// the API and removing it: six months.
const SunsetDays = 183

// Finding is one breaking change: the operation ("GET /contacts/{id}", or
// "webhook:contact.created"), oasdiff's rule id and its message, which
// names the field, parameter or value.
type Finding struct {
	Operation string
	ID        string
	Text      string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s", f.Operation, f.ID, f.Text)
}

// levels adjusts oasdiff's severities to the deprecation rule (docs/releasing.md). Every removal is a
// breaking change unless it was deprecated first: an optional response
// property a client reads is as removed as a required one (oasdiff calls
// that INFO). Additions are not breaking: a new value of an enum the API
// answers with (an event type, a status) is one a consumer must ignore,
// as the rule says of unknown fields and event types (oasdiff calls that
// ERR), and so is a new branch of a response's oneOf.
//
// A removal of something deprecated without an x-sunset date is breaking
// too (oasdiff calls it INFO): nothing says six months have passed.
var levels = map[string]checker.Level{
	checker.APIPathRemovedWithDeprecationId:                  checker.ERR,
	checker.APIRemovedWithDeprecationId:                      checker.ERR,
	checker.RequestParameterRemovedWithDeprecationId:         checker.ERR,
	checker.RequestPropertyRemovedWithDeprecationId:          checker.ERR,
	checker.ResponseRequiredPropertyRemovedWithDeprecationId: checker.ERR,
	checker.ResponseOptionalPropertyRemovedId:                checker.ERR,
	checker.ResponseOptionalWriteOnlyPropertyRemovedId:       checker.INFO,
	checker.ResponsePropertyEnumValueAddedId:                 checker.INFO,
	// A new branch of a response's oneOf: the feed's Event gains the body
	// of a new event type, which a consumer ignores like the type itself.
	checker.ResponsePropertyOneOfAddedId: checker.INFO,
	checker.ResponseBodyOneOfAddedId:     checker.INFO,
}

// receiverAdditive are the changes oasdiff reads in a webhook's body as
// in a request a client sends, though the API sends it and the receiver
// reads it: a property the body now always carries is one more field a
// receiver ignores until it knows it. Removing one, or changing its type,
// still breaks the receiver and is reported.
var receiverAdditive = map[string]bool{
	checker.NewRequiredRequestPropertyId:               true,
	checker.NewRequiredRequestPropertyWithDefaultId:    true,
	checker.RequestPropertyBecameRequiredId:            true,
	checker.RequestPropertyBecameRequiredWithDefaultId: true,
}

// Check compares revision (the document served now) with base (the
// released one) at time now and returns the breaking changes, sorted as
// oasdiff sorts them. A removal the base document deprecated with an
// x-sunset date that has passed is not one; oasdiff reports a deprecation
// whose sunset is less than SunsetDays away, or missing, as breaking.
func Check(base, revision []byte, now time.Time) ([]Finding, error) {
	s1, err := loadSpec("base", base)
	if err != nil {
		return nil, err
	}
	s2, err := loadSpec("revision", revision)
	if err != nil {
		return nil, err
	}
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), s1, s2)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	cfg := checker.NewConfig(checker.GetAllChecks(),
		checker.WithSeverityLevels(levels),
		checker.WithDeprecation(SunsetDays, SunsetDays))
	changes := checker.CheckBackwardCompatibilityUntilLevel(cfg, d, sources, checker.WARN)
	l := checker.NewDefaultLocalizer()
	var out []Finding
	for _, c := range changes {
		if c.GetId() == checker.ResponseOptionalPropertyRemovedId && sunsetPassed(s1.Spec, c, now) {
			continue
		}
		if strings.HasPrefix(c.GetPath(), "webhook:") && receiverAdditive[c.GetId()] {
			continue
		}
		op := strings.TrimSpace(c.GetOperation() + " " + c.GetPath())
		out = append(out, Finding{Operation: op, ID: c.GetId(), Text: c.GetUncolorizedText(l)})
	}
	return append(out, sunsetsTooSoon(s1.Spec, s2.Spec, now)...), nil
}

func loadSpec(name string, b []byte) (*load.SpecInfo, error) {
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("%s document: %w", name, err)
	}
	return &load.SpecInfo{Url: name, Spec: spec}, nil
}

// sunsetPassed says whether the optional response property a
// response-optional-property-removed change names (its arguments: the
// property's path, "data/name", and the status) was deprecated in the base
// document with an x-sunset date on or before now: a removal oasdiff
// reports whatever the property's deprecation, which the deprecation rule allows.
func sunsetPassed(base *openapi3.T, c checker.Change, now time.Time) bool {
	args := c.GetArgs()
	if len(args) < 2 {
		return false
	}
	prop, _ := args[0].(string)
	status := fmt.Sprint(args[1])
	op := operation(base, c.GetOperation(), c.GetPath())
	if op == nil || op.Responses == nil || prop == "" {
		return false
	}
	resp := op.Responses.Value(status)
	if resp == nil || resp.Value == nil {
		return false
	}
	for _, mt := range resp.Value.Content {
		if mt.Schema == nil {
			continue
		}
		if s := property(mt.Schema.Value, splitPath(prop)); s != nil {
			return s.Deprecated && sunsetOnOrBefore(s.Extensions, now)
		}
	}
	return false
}

func operation(t *openapi3.T, method, path string) *openapi3.Operation {
	if name, ok := strings.CutPrefix(path, "webhook:"); ok {
		if item := t.Webhooks[name]; item != nil {
			return item.GetOperation(method)
		}
		return nil
	}
	if t.Paths == nil {
		return nil
	}
	item := t.Paths.Value(path)
	if item == nil {
		return nil
	}
	return item.GetOperation(method)
}

// property follows a property path as oasdiff names it ("data/items/x",
// "data/items/record/anyOf[#/components/schemas/Contact]/x"): property
// names, "items" for an array's items, "allOf[..]", "anyOf[..]" and
// "oneOf[..]" for a composition's branches.
func property(s *openapi3.Schema, path []string) *openapi3.Schema {
	if s == nil {
		return nil
	}
	if len(path) == 0 {
		return s
	}
	seg, rest := path[0], path[1:]
	if p := s.Properties[seg]; p != nil {
		if found := property(p.Value, rest); found != nil {
			return found
		}
	}
	if seg == "items" && s.Items != nil {
		if found := property(s.Items.Value, rest); found != nil {
			return found
		}
	}
	for prefix, group := range map[string]openapi3.SchemaRefs{"allOf[": s.AllOf, "anyOf[": s.AnyOf, "oneOf[": s.OneOf} {
		if !strings.HasPrefix(seg, prefix) {
			continue
		}
		for _, r := range group {
			if found := property(r.Value, rest); found != nil {
				return found
			}
		}
	}
	return nil
}

// splitPath splits a property path at the slashes outside brackets.
func splitPath(p string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range p {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '/':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}

func sunsetOnOrBefore(ext map[string]any, now time.Time) bool {
	t := sunsetOf(ext)
	return !t.IsZero() && !t.After(now)
}

// sunsetOf is the x-sunset date of ext (RFC 3339, date or date-time);
// zero when there is none or it is not a date.
func sunsetOf(ext map[string]any) time.Time {
	v, ok := ext[diff.SunsetExtension].(string)
	if !ok {
		return time.Time{}
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, strings.TrimSpace(v)); err == nil {
			return t
		}
	}
	return time.Time{}
}
