package identity_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
	"github.com/opencrm/crm/services/identity/migrations"
)

func newDB(t *testing.T) *db.DB {
	t.Helper()
	return testdb.New(t, "identity", func(ctx context.Context, d *db.DB) error {
		if err := db.Migrate(ctx, d, "identity", migrations.FS); err != nil {
			return err
		}
		return outbox.Migrate(ctx, d)
	}, migrations.FS, outbox.Migrations)
}

func TestHasher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := identity.NewHasher(identity.DefaultArgon2, 2)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("encoding %q is not a PHC argon2id string with the default cost", enc)
	}
	tests := []struct {
		name, password, encoded string
		ok, wantErr             bool
	}{
		{"right password", "correct horse battery", enc, true, false},
		{"wrong password", "correct horse batterY", enc, false, false},
		{"bcrypt hash", "x", "$2a$10$abcdefghijklmnopqrstuv", false, true},
		{"garbage", "x", "argon2id", false, true},
		{"absurd memory", "x", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$aGFzaA", false, true},
		{"bad salt", "x", "$argon2id$v=19$m=64,t=1,p=1$!!$aGFzaA", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := h.Verify(ctx, tc.password, tc.encoded)
			if ok != tc.ok || (err != nil) != tc.wantErr {
				t.Fatalf("Verify = %v, %v; want %v, error %v", ok, err, tc.ok, tc.wantErr)
			}
		})
	}
	// A hash made with other parameters still verifies (cost upgrades).
	light, err := identity.NewHasher(identity.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := light.Hash(ctx, "old password 1")
	if ok, err := h.Verify(ctx, "old password 1", old); !ok || err != nil {
		t.Fatalf("verify of a lighter hash = %v, %v", ok, err)
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s", 32)
	s, err := identity.NewSealer(secret)
	if err != nil {
		t.Fatal(err)
	}
	seed := []byte("0123456789abcdef0123456789abcdef")
	ct, enc, err := s.Seal("kid1", seed)
	if err != nil || enc != identity.EncryptionAESGCM || strings.Contains(string(ct), string(seed)) {
		t.Fatalf("Seal = %q, %q, %v", ct, enc, err)
	}
	got, err := s.Open("kid1", ct, enc)
	if err != nil || string(got) != string(seed) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := identity.NewSealer(strings.Repeat("t", 32))
	plain, _ := identity.NewSealer("")
	for name, fn := range map[string]func() error{
		"other kid":    func() error { _, err := s.Open("kid2", ct, enc); return err },
		"other secret": func() error { _, err := other.Open("kid1", ct, enc); return err },
		"no secret":    func() error { _, err := plain.Open("kid1", ct, enc); return err },
		"truncated":    func() error { _, err := s.Open("kid1", ct[:5], enc); return err },
	} {
		if fn() == nil {
			t.Errorf("%s: opened, want an error", name)
		}
	}
}

func TestKeyringEncryptedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDB(t)
	st := store.New(d)
	policy := identity.PolicyFor(15 * time.Minute)
	good, _ := identity.NewSealer(strings.Repeat("k", 32))
	k1, err := identity.NewKeyring(ctx, st, good, policy)
	if err != nil {
		t.Fatal(err)
	}
	var enc string
	var n int
	if err := d.QueryRow(ctx, `SELECT min(encryption), count(*) FROM signing_keys`).Scan(&enc, &n); err != nil {
		t.Fatal(err)
	}
	if enc != identity.EncryptionAESGCM || n != 1 {
		t.Fatalf("stored %d keys with encryption %q", n, enc)
	}
	// A replica with the same secret reuses the key; a wrong secret fails
	// loudly at start-up instead of minting with a new key.
	k2, err := identity.NewKeyring(ctx, st, good, policy)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(k1.JWKS(ctx), k2.JWKS(ctx)); diff != "" {
		t.Fatalf("second keyring differs (-first +second):\n%s", diff)
	}
	bad, _ := identity.NewSealer(strings.Repeat("x", 32))
	if _, err := identity.NewKeyring(ctx, st, bad, policy); err == nil {
		t.Fatal("keyring loaded with a wrong CRM_SECRET_KEY")
	}
}

func TestKeyringRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, _ := identity.NewSealer("")
	tests := []struct {
		name   string
		policy identity.KeyPolicy
		want   int
	}{
		{"recently retired kept", identity.KeyPolicy{RetiredFor: time.Hour}, 6},
		{"access TTL, leeway and a minute", identity.PolicyFor(15 * time.Minute), 6},
		{"only the active key", identity.KeyPolicy{}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := identity.NewKeyring(ctx, store.New(newDB(t)), plain, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for i := 0; i < 5; i++ {
				if last, err = k.Rotate(ctx); err != nil {
					t.Fatal(err)
				}
			}
			set := k.JWKS(ctx)
			if len(set.Keys) != tc.want || set.Keys[0].Kid != last {
				t.Fatalf("published %d keys (first %s), want %d with %s first", len(set.Keys), set.Keys[0].Kid, tc.want, last)
			}
		})
	}
}

// TestKeyringWithdrawsRetiredKey: identity's own verifier stops accepting a
// retired key once its grace period is over (at the next reload), as the
// JWKS stops publishing it; it does not keep serving its cached copy.
func TestKeyringWithdrawsRetiredKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDB(t)
	plain, _ := identity.NewSealer("")
	policy := identity.PolicyFor(15 * time.Minute)
	k, err := identity.NewKeyring(ctx, store.New(d), plain, policy)
	if err != nil {
		t.Fatal(err)
	}
	old := k.JWKS(ctx).Keys[0].Kid
	if _, err := k.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Key(ctx, old); err != nil {
		t.Fatalf("retired key refused within its grace period: %v", err)
	}
	if _, err := d.Exec(ctx, `UPDATE signing_keys SET retired_at = now() - make_interval(secs => $1) WHERE kid = $2`,
		(policy.RetiredFor + time.Second).Seconds(), old); err != nil {
		t.Fatal(err)
	}
	identity.SetReload(k, 0) // the reload interval has passed
	if _, err := k.Key(ctx, old); !errors.Is(err, auth.ErrUnknownKey) {
		t.Fatalf("Key(retired kid past its grace period) = %v, want %v", err, auth.ErrUnknownKey)
	}
}

func TestKeyringFirstKeyRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDB(t)
	plain, _ := identity.NewSealer("")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := identity.NewKeyring(ctx, store.New(d), plain, identity.PolicyFor(15*time.Minute)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM signing_keys`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d signing keys after concurrent start-up (%v), want 1", n, err)
	}
}

// BenchmarkHash measures one argon2id hash at the production cost, the
// dominant cost of a login.
func BenchmarkHash(b *testing.B) {
	h, err := identity.NewHasher(identity.DefaultArgon2, 1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := h.Hash(context.Background(), "correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
