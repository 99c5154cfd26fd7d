package sealbox_test

import (
	"errors"
	"testing"

	"github.com/opencrm/crm/pkg/sealbox"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	b, err := sealbox.New("0123456789abcdef-secret", "test/a")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := b.Seal([]byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Open(sealed)
	if err != nil || string(got) != "hunter2" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	again, _ := b.Seal([]byte("hunter2"))
	if string(again) == string(sealed) {
		t.Error("two seals of one value are equal (nonce reused)")
	}

	otherPurpose, _ := sealbox.New("0123456789abcdef-secret", "test/b")
	otherKey, _ := sealbox.New("another-secret-key-0000", "test/a")
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	for name, tc := range map[string]struct {
		box *sealbox.Box
		v   []byte
	}{
		"other purpose": {otherPurpose, sealed},
		"other key":     {otherKey, sealed},
		"tampered":      {b, tampered},
		"short":         {b, sealed[:5]},
		"bad version":   {b, append([]byte{9}, sealed[1:]...)},
	} {
		if _, err := tc.box.Open(tc.v); !errors.Is(err, sealbox.ErrOpen) {
			t.Errorf("%s: err = %v, want ErrOpen", name, err)
		}
	}
}

func TestNewRefusesShortSecretAndNoPurpose(t *testing.T) {
	t.Parallel()
	if _, err := sealbox.New("short", "p"); !errors.Is(err, sealbox.ErrShortSecret) {
		t.Errorf("short secret: err = %v", err)
	}
	if _, err := sealbox.New("0123456789abcdef", ""); err == nil {
		t.Error("empty purpose accepted")
	}
}
