package webhooksapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	// SecretPrefix starts every signing secret; the rest is base64 of the key.
	SecretPrefix = "whsec_"
)

// Sign returns one "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per
// secret, space-separated, as the webhook-signature header carries them
// (two during a rotation).
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, "v1,"+mac(key, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

// ErrSignature is a delivery that does not verify: no signature matches,
// or the timestamp is outside the tolerance.
var ErrSignature = errors.New("webhook signature does not verify")

// Verify checks a delivery's headers against secret, refusing timestamps
// further than tolerance from now (replays).
func Verify(secret, id, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrSignature
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrSignature
	}
	want := mac(key, id, ts, body)
	for _, sig := range strings.Fields(signature) {
		v, got, ok := strings.Cut(sig, ",")
		if ok && v == "v1" && hmac.Equal([]byte(got), []byte(want)) {
			return nil
		}
	}
	return ErrSignature
}

func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errors.New("webhooksapi: a secret is whsec_ followed by base64")
	}
	return key, nil
}

func mac(key []byte, id string, ts int64, body []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	h.Write(body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}
