package e2e

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// uploadForm posts a multipart form through the gateway, fields in order;
// the field named "file" is sent as a file part.
func uploadForm(t *testing.T, c *Client, path string, fields ...[2]string) *Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f[0] == "file" {
			fw, _ := mw.CreateFormFile("file", "export.csv")
			_, _ = fw.Write([]byte(f[1]))
			continue
		}
		_ = mw.WriteField(f[0], f[1])
	}
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.Base+path, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r, err := c.send(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestImportOptionsThroughGateway: the mapping and dry_run form fields
// reach contacts and leads through the gateway, and a dry run writes
// nothing that a list could see.
func TestImportOptionsThroughGateway(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	tag := uniq("port")
	file := "Kontakt\tMail\tFax\r\nMary Ann " + tag + "\t" + tag + "@x.test\t1\r\n"
	mapping := `{"Kontakt":"full_name","Mail":"email","Fax":""}`
	for _, path := range []string{"/contacts", "/leads"} {
		t.Run(path, func(t *testing.T) {
			r := uploadForm(t, adm, path+"/import", [2]string{"mapping", mapping}, [2]string{"dry_run", "true"}, [2]string{"file", file})
			got := map[string]any{"status": float64(r.Status), "imported": r.JSON["imported"], "dry_run": r.JSON["dry_run"],
				"delimiter": r.JSON["delimiter"], "ignored_columns": r.JSON["ignored_columns"]}
			want := map[string]any{"status": 200.0, "imported": 1.0, "dry_run": true, "delimiter": "\t", "ignored_columns": []any{"Fax"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("dry run (-want +got):\n%s\n%s", diff, r)
			}
			if l := must(t, http.StatusOK)(adm.Do("GET", path+"?search="+tag, nil)); l.JSON["total"] != 0.0 {
				t.Fatalf("dry run wrote: %s", l)
			}
			r = uploadForm(t, adm, path+"/import", [2]string{"mapping", mapping}, [2]string{"file", file})
			if r.Status != 200 || r.JSON["imported"] != 1.0 {
				t.Fatalf("import: %s", r)
			}
			l := must(t, http.StatusOK)(adm.Do("GET", path+"?search="+tag, nil))
			rec, _ := l.JSON["data"].([]any)
			if len(rec) != 1 || rec[0].(map[string]any)["first_name"] != "Mary" || rec[0].(map[string]any)["last_name"] != "Ann "+tag {
				t.Fatalf("imported: %s", l)
			}
		})
	}
}
