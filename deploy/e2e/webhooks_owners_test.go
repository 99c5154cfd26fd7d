package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestRevokedTokenWebhooksDisabled: an integration token's subscription
// belongs to it (another token does not see it), the feed refuses it a
// type its scopes do not read, and revoking the token on /access-tokens
// disables the subscription, with the reason, within 5 s (identity's
// user.updated for the token's service user, read by webhooks).
func TestRevokedTokenWebhooksDisabled(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	tok := createToken(t, adm, map[string]any{"name": "Hook sync " + randHex(3), "scopes": []string{"webhooks:write", "contacts:read"}})
	c := stack.Client().With(secretOf(tok))
	rc := newReceiver(t)
	hook, _ := subscribe(t, c, rc.srv.URL+"/hooks", "contact.created")

	other := createToken(t, adm, map[string]any{"name": "Other sync " + randHex(3), "scopes": []string{"webhooks:read"}})
	r := must(t, http.StatusNotFound)(stack.Client().With(secretOf(other)).Do("GET", fmt.Sprintf("/webhooks/%d", hook), nil))
	if r.JSON["code"] != "not_found" {
		t.Errorf("another token reads the webhook: %s", r)
	}
	r = must(t, http.StatusForbidden)(c.Do("GET", "/events?type=deal.updated", nil))
	if r.JSON["code"] != "insufficient_scope" || r.Header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope", scope="deals:read"` {
		t.Errorf("feed of an unreadable type: %s (WWW-Authenticate %q)", r, r.Header.Get("WWW-Authenticate"))
	}

	must(t, http.StatusOK)(adm.Do("DELETE", fmt.Sprintf("/access-tokens/%d", idOf(tok, "id")), nil))
	start := time.Now()
	var got map[string]any
	eventually(t, "the token's webhook disabled", func() error {
		got = must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/webhooks/%d", hook), nil)).Data()
		if got["active"] != false {
			return fmt.Errorf("webhook %v", got)
		}
		return nil
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("disabled %s after the revocation, want within 5 s", d)
	}
	if got["disabled_reason"] != "owner's access token was revoked" {
		t.Errorf("disabled_reason = %v", got["disabled_reason"])
	}
}
