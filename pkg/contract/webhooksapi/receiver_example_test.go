package webhooksapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// verify is the receiver's check the README shows, standard library only;
// TestReadmeVerifier keeps the README's copy identical to this one.
//
// README:begin
// verify reports whether a delivery is authentic and fresh; secret is the
// subscription's whsec_... (during a rotation, try each secret you hold).
func verify(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	ts, err2 := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || err2 != nil || math.Abs(time.Since(time.Unix(ts, 0)).Seconds()) > 300 {
		return false // unknown secret format, or too old / from the future: a replay
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// README:end

func TestReadmeVerifier(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_7","type":"contact.created","created_at":"2026-11-24T09:30:00.000000Z","data":{"id":42}}`)
	now := time.Now()
	sig, err := webhooksapi.Sign([]string{refSecret}, "evt_7", now, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhooksapi.HeaderID, "evt_7")
	h.Set(webhooksapi.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhooksapi.HeaderSignature, "v1,bm90IHRoaXMgb25l "+sig)
	if !verify(refSecret, h, body) {
		t.Error("a signed delivery does not verify")
	}
	if verify(refSecret, h, append(body, ' ')) {
		t.Error("a changed body verifies")
	}
	h.Set(webhooksapi.HeaderTimestamp, strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10))
	if verify(refSecret, h, body) {
		t.Error("an old timestamp verifies")
	}

	src, err := os.ReadFile("receiver_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(src), "// README:begin\n")
	code, _, _ = strings.Cut(code, "\n// README:end")
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), code) {
		t.Errorf("README.md does not show the tested verifier; copy it from receiver_example_test.go:\n%s", code)
	}
}
