package contacts

import (
	"strings"

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
func E164(raw, region string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	if region == "" {
		region = DefaultPhoneRegion
	}
	n, err := phonenumbers.Parse(raw, strings.ToUpper(region))
	if err != nil || !phonenumbers.IsPossibleNumber(n) {
		return ""
	}
	return phonenumbers.Format(n, phonenumbers.E164)
}
