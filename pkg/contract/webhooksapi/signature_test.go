package webhooksapi_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// The example of the Standard Webhooks specification (and Svix's docs).
const (
	refSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	refID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	refTS     = 1614265330
	refBody   = `{"test": 2432232314}`
	refSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesStandardWebhooksExample(t *testing.T) {
	t.Parallel()
	got, err := webhooksapi.Sign([]string{refSecret}, refID, time.Unix(refTS, 0), []byte(refBody))
	if err != nil || got != refSig {
		t.Fatalf("Sign = %q, %v; want %q", got, err, refSig)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	other := "whsec_" + "c2Vjb25kLXNlY3JldC1mb3ItdGhlLXJvdGF0aW9uLXRlc3Q="
	both, err := webhooksapi.Sign([]string{other, refSecret}, refID, time.Unix(refTS, 0), []byte(refBody))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(refTS+60, 0)
	tests := []struct {
		name, secret, ts, sig, body string
		now                         time.Time
		wantErr                     bool
	}{
		{"reference", refSecret, "1614265330", refSig, refBody, now, false},
		{"either secret of a rotation", refSecret, "1614265330", both, refBody, now, false},
		{"the other secret of a rotation", other, "1614265330", both, refBody, now, false},
		{"body changed", refSecret, "1614265330", refSig, refBody + " ", now, true},
		{"timestamp changed", refSecret, "1614265331", refSig, refBody, now, true},
		{"too old", refSecret, "1614265330", refSig, refBody, time.Unix(refTS+301, 0), true},
		{"from the future", refSecret, "1614265330", refSig, refBody, time.Unix(refTS-301, 0), true},
		{"wrong version", refSecret, "1614265330", strings.Replace(refSig, "v1,", "v2,", 1), refBody, now, true},
		{"not a number", refSecret, "soon", refSig, refBody, now, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := webhooksapi.Verify(tt.secret, refID, tt.ts, tt.sig, []byte(tt.body), tt.now, 5*time.Minute)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Verify = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, webhooksapi.ErrSignature) {
				t.Fatalf("Verify = %v, want ErrSignature", err)
			}
		})
	}
}

func TestSignRefusesMalformedSecret(t *testing.T) {
	t.Parallel()
	if _, err := webhooksapi.Sign([]string{"whsec_***"}, refID, time.Unix(refTS, 0), nil); err == nil {
		t.Fatal("Sign accepted a secret that is not base64")
	}
}

func TestEveryEventTypeHasAPayload(t *testing.T) {
	t.Parallel()
	for _, typ := range append(append([]string{}, webhooksapi.EventTypes...), webhooksapi.Ping) {
		if webhooksapi.Payload(typ) == nil {
			t.Errorf("Payload(%q) = nil", typ)
		}
	}
	if webhooksapi.Payload("user.created") != nil {
		t.Error("Payload of a type that is not published is not nil")
	}
}
