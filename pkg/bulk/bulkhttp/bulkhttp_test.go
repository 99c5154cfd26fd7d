package bulkhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/bulk/bulkhttp"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
)

type thing struct {
	Name string `json:"name"`
}

type thingUpdate struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// call is what a fake operation was given.
type call struct {
	Op, Key, IDProperty string
	Names               []string
	IDs                 []int64
	Owner               int64
}

// server mounts fake operations that record their call and answer one
// created result per input (a replay when the key is "again").
func server(t *testing.T) (*httptest.Server, *call) {
	t.Helper()
	got := &call{}
	results := func(n int, key string) bulkhttp.Done[thing] {
		res := make([]batchapi.Result[thing], n)
		for i := range res {
			res[i] = batchapi.Result[thing]{Status: batchapi.Created, Record: &thing{Name: "x"}}
		}
		return bulkhttp.Done[thing]{Value: res, Replayed: key == "batch:7:again"}
	}
	names := func(ins []thing) []string {
		var ns []string
		for _, in := range ins {
			ns = append(ns, in.Name)
		}
		return ns
	}
	ops := bulkhttp.Ops[thing, thing, thingUpdate]{
		Create: bulkhttp.Owned(func(_ context.Context, key string, ins []thing, owner *int64) (bulkhttp.Done[thing], error) {
			*got = call{Op: "create", Key: key, Names: names(ins), Owner: *owner}
			return results(len(ins), key), nil
		}),
		Update: func(_ context.Context, key string, ins []thingUpdate) (bulkhttp.Done[thing], error) {
			*got = call{Op: "update", Key: key, IDs: []int64{ins[0].ID}}
			return results(len(ins), key), nil
		},
		Upsert: bulkhttp.OwnedUpsert(func(_ context.Context, key, p string, ins []thing, owner *int64) (bulkhttp.Done[thing], error) {
			*got = call{Op: "upsert", Key: key, IDProperty: p, Names: names(ins), Owner: *owner}
			return results(len(ins), key), nil
		}),
		Read: func(_ context.Context, in batchapi.Read) ([]batchapi.Result[thing], error) {
			*got = call{Op: "read", IDs: in.IDs}
			return results(len(in.IDs), "").Value, nil
		},
		Delete: func(_ context.Context, key string, ids []int64) (bulkhttp.Done[thing], error) {
			*got = call{Op: "delete", Key: key, IDs: ids}
			return results(len(ids), key), nil
		},
	}
	rs := batchapi.NewRoutes[thing, thing, thingUpdate]("things", "thing", "Things", "/things", "things")
	rs.Create.BodyLimit = 64
	user := &auth.Claims{}
	user.Subject = "7"
	signedIn := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(auth.WithClaims(r.Context(), user)))
		})
	}
	mux := http.NewServeMux()
	bulkhttp.Mount(mux, httpx.Guards{route.JWT: signedIn}, rs, ops)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, got
}

// answer is a batch answer as the client reads it.
type answer struct {
	Status   int
	Replayed string
	Message  string `json:"message"`
	Data     []batchapi.Result[thing]
	Title    string `json:"title"`
}

func post(t *testing.T, srv *httptest.Server, path, key, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	a.Status, a.Replayed = resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
	return a
}

func TestMount(t *testing.T) {
	srv, got := server(t)
	for _, tc := range []struct {
		path, key, body string
		want            call
		message         string
		replayed        string
	}{
		{"/things/batch/create", "k1", `{"inputs":[{"name":"a"},{"name":"b"}]}`,
			call{Op: "create", Key: "batch:7:k1", Names: []string{"a", "b"}, Owner: 7}, "things created", ""},
		{"/things/batch/update", "again", `{"inputs":[{"id":3,"name":"a"}]}`,
			call{Op: "update", Key: "batch:7:again", IDs: []int64{3}}, "things updated", "true"},
		{"/things/batch/upsert", "", `{"id_property":"erp_id","inputs":[{"name":"a"}]}`,
			call{Op: "upsert", IDProperty: "erp_id", Names: []string{"a"}, Owner: 7}, "things upserted", ""},
		{"/things/batch/read", "again", `{"ids":[4,5]}`, call{Op: "read", IDs: []int64{4, 5}}, "", ""},
		{"/things/batch/delete", "k2", `{"ids":[4]}`, call{Op: "delete", Key: "batch:7:k2", IDs: []int64{4}}, "things deleted", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			a := post(t, srv, tc.path, tc.key, tc.body)
			if a.Status != http.StatusOK || a.Message != tc.message || a.Replayed != tc.replayed || len(a.Data) == 0 {
				t.Errorf("answer %+v, want 200 %q replayed %q", a, tc.message, tc.replayed)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("call (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMountRefuses(t *testing.T) {
	srv, got := server(t)
	if a := post(t, srv, "/things/batch/create", strings.Repeat("k", idempotency.MaxKeyLength+1), `{"inputs":[{"name":"a"}]}`); a.Status != http.StatusUnprocessableEntity {
		t.Errorf("bad key: %+v", a)
	}
	if a := post(t, srv, "/things/batch/create", "k", `{"inputs":[{"name":"`+strings.Repeat("a", 100)+`"}]}`); a.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("over the route's limit: %+v", a)
	}
	if got.Op != "" {
		t.Errorf("refused batches ran %+v", *got)
	}
}

// TestMountUserKey: a key is kept per caller, the message is the route's
// word for word, and a read has none.
func TestMountUserKey(t *testing.T) {
	srv, got := server(t)
	if a := post(t, srv, "/things/batch/create", "k1", `{"inputs":[{"name":"a"},{"name":"b"}]}`); a.Message != "things created" || got.Key != "batch:7:k1" {
		t.Errorf("create: message %q, key %q", a.Message, got.Key)
	}
	if a := post(t, srv, "/things/batch/read", "", `{"ids":[1]}`); a.Message != "" {
		t.Errorf("read: message %q", a.Message)
	}
	if post(t, srv, "/things/batch/delete", "", `{"ids":[1]}`); got.Key != "" {
		t.Errorf("no key sent: key %q", got.Key)
	}
}

func TestByIDProperty(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("GET /things/{id}", bulkhttp.ByIDProperty(func(w http.ResponseWriter, r *http.Request) error {
		httpx.OK(w, thing{Name: "id " + r.PathValue("id")})
		return nil
	}, func(_ context.Context, name, value string) (thing, error) {
		return thing{Name: name + " " + value}, nil
	}))
	for query, want := range map[string]string{
		"":                   "id 12",
		"?id_property=erp":   "erp 12",
		"?id_property=":      " 12",
		"?other=erp&x=1":     "id 12",
		"?id_property=a&x=1": "a 12",
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/things/12"+query, nil))
		var body struct{ Data thing }
		if err := json.NewDecoder(rec.Body).Decode(&body); err != nil || rec.Code != http.StatusOK || body.Data.Name != want {
			t.Errorf("GET /things/12%s: %d %+v %v, want %q", query, rec.Code, body, err, want)
		}
	}
}
