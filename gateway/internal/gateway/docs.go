package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"sort"
	"strings"
)

// docsStyle is the page's only style; its hash goes into the page's CSP, so
// the page needs no 'unsafe-inline' and loads nothing from anywhere.
const docsStyle = `body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin-bottom:2rem}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd;vertical-align:top}
code{font:13px ui-monospace,monospace}.m{font-weight:bold}.a{white-space:nowrap}.admin{color:#a00}.key{color:#063}.public{color:#555}`

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>{{.Style}}</style></head><body>
<h1>{{.Title}} {{.Version}}</h1>
<p>{{.Description}}</p>
<p>Base URL: <code>/api</code>. Machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<p>Authentication: <b>JWT</b> = <code>Authorization: Bearer &lt;access token&gt;</code> from <code>POST /api/auth/login</code>;
<b>admin</b> = a JWT of an admin-role user; <b>key</b> = <code>X-API-Key</code> (bearer tokens are refused there).</p>
{{range .Tags}}<h2 id="{{.ID}}">{{.Name}}</h2>
<table><tr><th>Method</th><th>Path</th><th>Auth</th><th>Summary</th><th>Query</th></tr>
{{range .Ops}}<tr><td class="m">{{.Method}}</td><td><code>/api{{.Path}}</code></td><td class="a {{.Auth}}">{{.Auth}}</td><td>{{.Summary}}</td><td>{{range .Query}}<code>{{.Name}}</code> {{end}}</td></tr>
{{end}}</table>
{{end}}
<h2 id="problems">Errors</h2>
<p>Every error is <code>application/problem+json</code>:
<code>{"type","title","status","detail","code","request_id","errors":[{"field","message"}]}</code>.</p>
<table><tr><th>Status</th><th>Meaning</th></tr>
{{range .Problems}}<tr><td>{{.Code}}</td><td>{{.Desc}}</td></tr>
{{end}}</table>
</body></html>
`))

type docsOp struct {
	Method, Path, Summary, Auth string
	Query                       []Param
}

type docsTag struct {
	Name, ID string
	Ops      []docsOp
}

// renderDocs renders the HTML reference from the OpenAPI document's source
// and returns it with its Content-Security-Policy.
func renderDocs(spec obj) ([]byte, string, error) {
	info, _ := spec["info"].(obj)
	var tags []docsTag
	index := map[string]int{}
	for _, op := range Operations() {
		i, ok := index[op.Tag]
		if !ok {
			i = len(tags)
			index[op.Tag] = i
			tags = append(tags, docsTag{Name: op.Tag, ID: strings.ReplaceAll(strings.ToLower(op.Tag), " ", "-")})
		}
		tags[i].Ops = append(tags[i].Ops, docsOp{Method: op.Method, Path: op.Path, Summary: op.Summary, Auth: op.Auth.String(), Query: op.Query})
	}
	type prob struct{ Code, Desc string }
	var problems []prob
	for code, d := range problemCodes {
		problems = append(problems, prob{code, d})
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Code < problems[j].Code })

	var buf bytes.Buffer
	err := docsTemplate.Execute(&buf, map[string]any{
		"Title": info["title"], "Version": info["version"], "Description": info["description"],
		"Style": template.CSS(docsStyle), "Tags": tags, "Problems": problems,
	})
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256([]byte(docsStyle))
	csp := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; frame-ancestors 'none'"
	return buf.Bytes(), csp, nil
}
