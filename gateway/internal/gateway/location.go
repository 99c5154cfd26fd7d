package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
)

// maxCreatedBody bounds the 201 body the gateway reads to find the new
// record's id (records are far smaller).
const maxCreatedBody = 1 << 20

// createdLocation is the Location of the record a 201 to path created:
// the collection's path plus data.id, except quotes, which live at
// /quotes/{id}, a signed copy, which lives at the path posted to, and a
// public lead, which is a lead. "" when the body names no id.
func createdLocation(path string, body []byte) string {
	if strings.HasSuffix(path, "/executed") {
		return "/api" + path
	}
	var b struct {
		Data struct {
			ID json.Number `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	id, err := strconv.ParseInt(b.Data.ID.String(), 10, 64)
	if err != nil || id <= 0 {
		return ""
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) == 3 && segs[0] == "deals" && segs[2] == "quotes":
		return "/api/quotes/" + strconv.FormatInt(id, 10)
	case path == "/public/leads":
		return "/api/leads/" + strconv.FormatInt(id, 10)
	}
	return "/api" + strings.TrimSuffix(path, "/") + "/" + strconv.FormatInt(id, 10)
}
