package contacts

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// DefaultPhoneRegion is the region a number without a country code is
// read in when the configuration names none.
const DefaultPhoneRegion = "US"

// PhoneE164 is the number duplicates are matched on: phone in E.164
// ("+442079460018"), else mobile, read in region (ISO 3166 alpha-2) when
// it has no country code; "" when neither is a possible number.
func PhoneE164(phone, mobile *string, region string) string {
	for _, p := range []*string{phone, mobile} {
		if p == nil {
			continue
		}
		if e := E164(*p, region); e != "" {
			return e
		}
	}
	return ""
}

// E164 is one number in E.164, "" when it is not a possible number.
//
// Numbers written as digits alone, with spaces or hyphens between them
// and an optional leading "+", take a fast path (e164Fast) that gives
// exactly what the library's Parse gives (TestE164FastIsParse,
// FuzzE164FastIsParse): Parse spends most of its time matching its
// extension pattern, which cannot match such a number, and a batch of
// contacts calls it once per contact.
func E164(raw, region string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if region == "" {
		region = DefaultPhoneRegion
	}
	region = strings.ToUpper(region)
	if e, ok := e164Fast(raw, region); ok {
		return e
	}
	return e164Parse(raw, region)
}

// e164Parse is E164 by the library alone: raw trimmed, region upper case.
func e164Parse(raw, region string) string {
	n, err := phonenumbers.Parse(raw, region)
	if err != nil || !phonenumbers.IsPossibleNumber(n) {
		return ""
	}
	return phonenumbers.Format(n, phonenumbers.E164)
}

// phoneMeta is what e164Fast needs of the library's metadata of a region
// or of a non-geographic calling code.
type phoneMeta struct {
	countryCode int
	// nationalPrefix matches the start of a national number Parse would
	// try to strip a national prefix (and carrier code) from; nil when
	// the region has none.
	nationalPrefix *regexp.Regexp
	// idd matches an international dialling prefix (unanchored, as the
	// library matches it; an empty one matches everywhere, as there).
	idd *regexp.Regexp
}

type phoneMetas struct {
	regions map[string]*phoneMeta // by region code
	nonGeo  map[int]*phoneMeta    // by calling code (region "001")
}

// loadPhoneMetas reads the library's own metadata (the collection it
// loaded at init) once. Every pattern is compiled as the library compiles
// it (regexFor: the pattern as written, or "^(?:…)" for the national
// prefix), so a match here is a match there.
var loadPhoneMetas = sync.OnceValue(func() phoneMetas {
	out := phoneMetas{regions: map[string]*phoneMeta{}, nonGeo: map[int]*phoneMeta{}}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return out // every number takes Parse
	}
	for _, m := range coll.GetMetadata() {
		pm := &phoneMeta{countryCode: int(m.GetCountryCode())}
		if p := m.GetNationalPrefixForParsing(); p != "" {
			pm.nationalPrefix = regexp.MustCompile("^(?:" + p + ")")
		}
		pm.idd = regexp.MustCompile(m.GetInternationalPrefix())
		if m.GetId() == "001" {
			out.nonGeo[pm.countryCode] = pm
		} else {
			out.regions[m.GetId()] = pm
		}
	}
	return out
})

// metaForCallingCode is the metadata Parse reads a number of calling code
// cc by: its main region's, or the non-geographic entity's.
func (ms phoneMetas) metaForCallingCode(cc int) *phoneMeta {
	region := phonenumbers.GetRegionCodeForCountryCode(cc)
	if region == "001" {
		return ms.nonGeo[cc]
	}
	return ms.regions[region]
}

// e164Fast is e164Parse for raw (trimmed, not empty) made of ASCII digits,
// with single spaces or hyphens between them and an optional leading
// "+"; ok is false for anything else, and for the cases where Parse does
// more than read the digits: no known calling code after a "+", a number
// without "+" starting with the region's international prefix or calling
// code, or a national number starting with a national prefix.
//
// For such a number Parse finds no extension (every extension pattern
// needs a letter, "#", "~", ";" or ","), takes the calling code from the
// first one to three digits after "+" (else the region's), keeps the rest
// as the national number, and checks and formats it as IsPossibleNumber
// and Format do here.
func e164Fast(raw, region string) (string, bool) {
	plus := raw[0] == '+'
	digits := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case (c == ' ' || c == '-') && i > 0 && isDigit(raw[i-1]) && i+1 < len(raw) && isDigit(raw[i+1]):
		case c == '+' && i == 0 && len(raw) > 1 && isDigit(raw[1]):
		default:
			return "", false
		}
	}
	// Parse wants three digits to call it a number (two without
	// punctuation) and at most 250 characters.
	if len(digits) < 3 || len(raw) > 250 {
		return "", false
	}
	ms := loadPhoneMetas()
	var meta *phoneMeta
	national := digits
	if plus {
		if digits[0] == '0' {
			return "", false
		}
		for i := 1; i <= 3; i++ {
			cc, _ := strconv.Atoi(string(digits[:i]))
			if len(phonenumbers.GetRegionCodesForCountryCode(cc)) > 0 {
				meta, national = ms.metaForCallingCode(cc), digits[i:]
				break
			}
		}
	} else if def := ms.regions[region]; def != nil {
		if at := def.idd.FindIndex(digits); at != nil && at[0] == 0 {
			return "", false
		}
		if strings.HasPrefix(string(digits), strconv.Itoa(def.countryCode)) {
			return "", false
		}
		meta = def
	}
	if meta == nil {
		return "", false
	}
	if len(national) < phonenumbers.MIN_LENGTH_FOR_NSN {
		return "", true
	}
	if meta.nationalPrefix != nil && meta.nationalPrefix.Match(national) {
		return "", false
	}
	if len(national) > phonenumbers.MAX_LENGTH_FOR_NSN {
		return "", true
	}
	nn, err := strconv.ParseUint(string(national), 10, 64)
	if err != nil {
		return "", false
	}
	n := &phonenumbers.PhoneNumber{}
	n.CountryCode = new(int32(meta.countryCode))
	n.NationalNumber = &nn
	// Leading zeros, as the library's setItalianLeadingZerosForPhoneNumber
	// keeps them (the last digit of an all-zero number is not one).
	if len(national) >= 2 && national[0] == '0' {
		n.ItalianLeadingZero = new(true)
		zeros := 1
		for zeros < len(national)-1 && national[zeros] == '0' {
			zeros++
		}
		if zeros != 1 {
			n.NumberOfLeadingZeros = new(int32(zeros))
		}
	}
	if !phonenumbers.IsPossibleNumber(n) {
		return "", true
	}
	return phonenumbers.Format(n, phonenumbers.E164), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
