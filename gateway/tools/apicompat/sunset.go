package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// sunsetsTooSoon finds what oasdiff checks only when something becomes
// deprecated: a sunset given to an operation, parameter or named schema's
// property the base document deprecated already, without one. That is a
// removal announced now, so the date must be at least SunsetDays away.
// (oasdiff itself refuses a sunset moved earlier.)
func sunsetsTooSoon(base, rev *openapi3.T, now time.Time) []Finding {
	var out []Finding
	check := func(where, what string, b, r deprecation) {
		if b.deprecated && b.sunset.IsZero() && r.deprecated && !r.sunset.IsZero() && r.sunset.Before(now.AddDate(0, 0, SunsetDays)) {
			out = append(out, Finding{Operation: where, ID: "sunset-too-soon",
				Text: fmt.Sprintf("%s was given the sunset %s, less than %d days from now", what, r.sunset.Format(time.DateOnly), SunsetDays)})
		}
	}
	if base.Paths != nil && rev.Paths != nil {
		for _, path := range slices.Sorted(maps.Keys(base.Paths.Map())) {
			bi, ri := base.Paths.Value(path), rev.Paths.Value(path)
			if ri == nil {
				continue
			}
			for _, method := range []string{"GET", "PUT", "POST", "DELETE", "PATCH"} {
				bo, ro := bi.GetOperation(method), ri.GetOperation(method)
				if bo == nil || ro == nil {
					continue
				}
				where := method + " " + path
				check(where, "the operation", deprecationOf(bo.Deprecated, bo.Extensions), deprecationOf(ro.Deprecated, ro.Extensions))
				for _, bp := range bo.Parameters {
					if bp.Value == nil {
						continue
					}
					if rp := ro.Parameters.GetByInAndName(bp.Value.In, bp.Value.Name); rp != nil {
						check(where, "the parameter "+bp.Value.Name, deprecationOf(bp.Value.Deprecated, bp.Value.Extensions), deprecationOf(rp.Deprecated, rp.Extensions))
					}
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(base.Components.Schemas)) {
		bs, rs := base.Components.Schemas[name], rev.Components.Schemas[name]
		if bs == nil || rs == nil || bs.Value == nil || rs.Value == nil {
			continue
		}
		for _, prop := range slices.Sorted(maps.Keys(bs.Value.Properties)) {
			bp, rp := bs.Value.Properties[prop], rs.Value.Properties[prop]
			if bp == nil || rp == nil || bp.Value == nil || rp.Value == nil {
				continue
			}
			check("schema "+name, "the property "+prop, deprecationOf(bp.Value.Deprecated, bp.Value.Extensions), deprecationOf(rp.Value.Deprecated, rp.Value.Extensions))
		}
	}
	return out
}

type deprecation struct {
	deprecated bool
	sunset     time.Time
}

func deprecationOf(deprecated bool, ext map[string]any) deprecation {
	return deprecation{deprecated: deprecated, sunset: sunsetOf(ext)}
}
