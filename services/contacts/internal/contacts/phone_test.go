package contacts

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nyaruka/phonenumbers"
)

// TestE164FastIsParse: E164's fast path gives what the library's Parse
// gives, for the numbers it takes and with the answer it gives; what it
// leaves to Parse is named by fast false.
func TestE164FastIsParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw, region string
		want        string
		fast        bool // taken by the fast path
	}{
		{"+1 888 0001234", "US", "+18880001234", true},    // the batch benchmark's numbers
		{"+18880001234", "US", "+18880001234", true},      // E.164
		{"+442079460018", "US", "+442079460018", true},    // E.164 of another region
		{"+44 20 7946 0018", "GB", "+442079460018", true}, // its own region's
		{"+44-20-7946-0018", "DE", "+442079460018", true},
		{"4155550100", "US", "+14155550100", true},   // national, digits only
		{"415-555-0100", "US", "+14155550100", true}, // national, hyphens
		{"30 123456", "DE", "+4930123456", true},
		{"+39 06 6982 1234", "US", "+390669821234", true},        // Italian leading zero kept
		{"+8001234 5678", "US", "+80012345678", true},            // non-geographic calling code
		{"+1 555", "US", "", true},                               // not a possible number
		{"+1 888 000123456789012345", "US", "", true},            // too long
		{"+44 020 7946 0018", "US", "+442079460018", false},      // national prefix: Parse strips it
		{"020 7946 0018", "GB", "+442079460018", false},          // ditto
		{"1 415 555 0100", "US", "+14155550100", false},          // starts with the calling code
		{"011 44 20 7946 0018", "US", "+442079460018", false},    // international prefix
		{"+0 123 4567", "US", "", false},                         // no calling code starts with 0
		{"+999 1234567", "US", "", false},                        // unknown calling code
		{"(415) 555-0100", "US", "+14155550100", false},          // parentheses
		{"+1 415 555 0100 ext. 12", "US", "+14155550100", false}, // extension
		{"+1 415 555 0100#", "US", "", false},                    // "0100#" is an extension
		{"415  555 0100", "US", "+14155550100", false},           // two spaces
		{"12", "US", "", false},
		{"+1 415 555 0100", "ZZ", "+14155550100", true}, // unknown region: the "+" names it
		{"415 555 0100", "ZZ", "", false},
	} {
		got, fast := e164Fast(tt.raw, tt.region)
		if fast != tt.fast {
			t.Errorf("e164Fast(%q, %q) fast = %v, want %v", tt.raw, tt.region, fast, tt.fast)
		}
		if !fast {
			got = e164Parse(tt.raw, tt.region)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("E164 path of %q in %s (-want +got):\n%s", tt.raw, tt.region, diff)
		}
		if diff := cmp.Diff(e164Parse(tt.raw, tt.region), E164(tt.raw, tt.region)); diff != "" {
			t.Errorf("E164(%q, %q) against Parse (-want +got):\n%s", tt.raw, tt.region, diff)
		}
	}
}

// phoneRegions are the default regions the property test reads numbers
// in: ones whose national prefix, international prefix or calling code
// differ in kind (none, "0", "1", a pattern with a transform rule, a long
// prefix, a shared calling code).
var phoneRegions = []string{"US", "CA", "GB", "DE", "FR", "IT", "AR", "BR", "MX", "RU", "KZ", "JP", "IN", "AU", "NZ", "SG", "HK", "CN", "AE", "ZA", "NG", "CI", "SM", "VA", "MC"}

// randomNumber writes a number the way people type one: an optional "+",
// maybe a known calling code, maybe a national prefix, digits, and
// separators (mostly the ones the fast path takes, sometimes others).
func randomNumber(r *rand.Rand, codes []int) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('+')
		if r.IntN(8) > 0 {
			b.WriteString(strconv.Itoa(codes[r.IntN(len(codes))]))
		}
	}
	if r.IntN(4) == 0 {
		b.WriteString([]string{"0", "1", "00", "011", "8", "9", "15", "0800"}[r.IntN(8)])
	}
	n := 1 + r.IntN(16)
	for i := range n {
		b.WriteByte(byte('0' + r.IntN(10)))
		if i < n-1 && r.IntN(4) == 0 {
			b.WriteString([]string{" ", "-", " ", "-", "  ", ".", "(", ")", "/", "x"}[r.IntN(10)])
		}
	}
	return b.String()
}

// TestE164FastIsParseProperty compares the fast path with Parse over
// 200,000 generated numbers in many regions, for every calling code; the
// fast path must take a quarter of them at least, or the comparison
// proves little.
func TestE164FastIsParseProperty(t *testing.T) {
	t.Parallel()
	var codes []int
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		codes = append(codes, cc)
	}
	r := rand.New(rand.NewPCG(30, 2026))
	const total = 200_000
	fast := 0
	for range total {
		raw, region := randomNumber(r, codes), phoneRegions[r.IntN(len(phoneRegions))]
		want := e164Parse(strings.TrimSpace(raw), region)
		got, ok := e164Fast(strings.TrimSpace(raw), region)
		if !ok {
			continue
		}
		fast++
		if got != want {
			t.Errorf("e164Fast(%q, %q) = %q, Parse gives %q", raw, region, got, want)
		}
	}
	if fast < total/4 {
		t.Fatalf("the fast path took %d of %d numbers", fast, total)
	}
	t.Logf("the fast path took %d of %d numbers", fast, total)
}

// FuzzE164FastIsParse: for any input, the fast path either declines or
// answers what Parse answers.
func FuzzE164FastIsParse(f *testing.F) {
	for _, s := range []string{"+1 888 0001234", "4155550100", "+44 20 7946 0018", "020 7946 0018", "+800 1234 5678",
		"011 44 20 7946 0018", "+39 06 6982 1234", "30-123456", "+0 1", "1-2", "+7 7 1234567890"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, raw string, regionAt uint8) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return
		}
		region := phoneRegions[int(regionAt)%len(phoneRegions)]
		if got, ok := e164Fast(raw, region); ok {
			if want := e164Parse(raw, region); got != want {
				t.Errorf("e164Fast(%q, %q) = %q, Parse gives %q", raw, region, got, want)
			}
		}
	})
}

func BenchmarkE164(b *testing.B) {
	for _, raw := range []string{"+1 888 0001234", "415-555-0100", "(415) 555-0100"} {
		b.Run(raw, func(b *testing.B) {
			b.Run("E164", func(b *testing.B) {
				for b.Loop() {
					E164(raw, "US")
				}
			})
			b.Run("Parse", func(b *testing.B) {
				for b.Loop() {
					e164Parse(raw, "US")
				}
			})
		})
	}
}
