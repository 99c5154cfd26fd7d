package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Client calls the gateway as an API consumer would.
type Client struct {
	Base  string
	Token string
	// Header is added to every request (X-API-Key, Idempotency-Key...).
	Header http.Header
	HTTP   *http.Client
	// Record, when set, sees every exchange (the OpenAPI contract check).
	Record func(method, path string, r *Response)
}

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
	// RequestJSON is the JSON request body sent, decoded for the contract
	// check (nil when none was sent).
	RequestJSON any
	// RequestQuery is the query string sent.
	RequestQuery url.Values
}

// transport is shared by every test client. net/http's default keeps two
// idle connections per host, so 16 concurrent benchmark clients would open
// a new TCP connection for most requests and measure connection set-up
// instead of the API; pgbench, the intake baseline, keeps its connections.
var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}()

// NewClient calls base (the gateway's /api URL).
func NewClient(base string) *Client {
	return &Client{Base: base, Header: http.Header{}, HTTP: &http.Client{Timeout: 60 * time.Second, Transport: transport}}
}

// With returns a copy using token.
func (c *Client) With(token string) *Client {
	cp := *c
	cp.Token = token
	cp.Header = c.Header.Clone()
	return &cp
}

// Do sends a JSON body (nil for none) and decodes a JSON answer.
func (c *Client) Do(method, path string, body any) (*Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if body == nil {
		return c.send(req, nil)
	}
	req.Header.Set("Content-Type", "application/json")
	b, _ := json.Marshal(body)
	sent, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return c.send(req, sent)
}

// Upload sends a multipart form with one file field.
func (c *Client) Upload(path, field, filename string, content []byte) (*Response, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile(field, filename)
	if err != nil {
		return nil, err
	}
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.Base+path, &buf)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.send(req, nil)
}

func (c *Client) send(req *http.Request, sent any) (*Response, error) {
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b, RequestJSON: sent, RequestQuery: req.URL.Query()}
	_ = json.Unmarshal(b, &r.JSON)
	if c.Record != nil {
		c.Record(req.Method, req.URL.Path, r)
	}
	return r, nil
}

// Data returns the "data" object of a success envelope.
func (r *Response) Data() map[string]any {
	d, _ := r.JSON["data"].(map[string]any)
	return d
}

// ID returns data.id as an int64.
func (r *Response) ID() int64 {
	f, _ := r.Data()["id"].(float64)
	return int64(f)
}

func (r *Response) String() string {
	return fmt.Sprintf("%d %s", r.Status, r.Body)
}

// Login returns an access token.
func (c *Client) Login(email, password string) (string, error) {
	r, err := c.Do(http.MethodPost, "/auth/login", map[string]string{"email": email, "password": password})
	if err != nil {
		return "", err
	}
	if r.Status != http.StatusOK {
		return "", fmt.Errorf("login: %s", r)
	}
	tok, _ := r.Data()["access_token"].(string)
	return tok, nil
}
