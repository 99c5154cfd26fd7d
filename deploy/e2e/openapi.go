package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Contract checks real exchanges against the gateway's OpenAPI document:
// every path and method a test called must be documented, with the status
// code it answered among the operation's documented responses.
type Contract struct {
	paths map[string]map[string]map[string]bool // template → method → status codes

	mu       sync.Mutex
	problems map[string]bool
	seen     int
}

// LoadContract fetches {gateway}/openapi.json, whose paths are relative to
// the /api prefix.
func LoadContract(gatewayURL string) (*Contract, error) {
	resp, err := http.Get(gatewayURL + "/openapi.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Servers []struct{ URL string } `json:"servers"`
		Paths   map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	c := &Contract{paths: map[string]map[string]map[string]bool{}, problems: map[string]bool{}}
	for p, ops := range doc.Paths {
		c.paths[p] = map[string]map[string]bool{}
		for m, op := range ops {
			codes := map[string]bool{}
			for code := range op.Responses {
				codes[code] = true
			}
			c.paths[p][strings.ToUpper(m)] = codes
		}
	}
	return c, nil
}

// Record is a Client.Record hook.
func (c *Contract) Record(method, path string, r *Response) {
	rel := strings.TrimPrefix(path, "/api")
	if method == http.MethodHead || strings.HasPrefix(rel, "/internal") || r.Status == http.StatusTooManyRequests {
		return
	}
	tmpl, ok := c.match(rel)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	switch {
	case !ok:
		c.problems[fmt.Sprintf("%s %s: path not documented", method, rel)] = true
	case c.paths[tmpl][method] == nil:
		c.problems[fmt.Sprintf("%s %s: method not documented", method, tmpl)] = true
	case !c.paths[tmpl][method][strconv.Itoa(r.Status)] && !c.paths[tmpl][method]["default"]:
		c.problems[fmt.Sprintf("%s %s: status %d not documented", method, tmpl, r.Status)] = true
	}
}

// match finds the documented template for a concrete path ({id} segments).
func (c *Contract) match(path string) (string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLiterals := "", -1
	for tmpl := range c.paths {
		ts := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
			case t == segs[i]:
				literals++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = tmpl, literals
		}
	}
	return best, bestLiterals >= 0
}

// Problems lists every mismatch seen, sorted.
func (c *Contract) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.problems))
	for p := range c.problems {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Seen is how many exchanges were checked.
func (c *Contract) Seen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}
