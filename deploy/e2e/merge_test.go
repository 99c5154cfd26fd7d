package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestMergeContactsAcrossContexts merges two contacts of one person, each
// with a note, a deal and a lead, through the gateway: the survivor holds
// everything, the merged id answers 404 merged with merged_into. Deals is
// SIGKILLed before the merge, so its step fails and the merge stays
// running; once deals is back, contacts' runner completes it, and each
// deal moved once (one history entry via merge). Not parallel: it stops a
// service of the shared stack, and restores it before returning.
func TestMergeContactsAcrossContexts(t *testing.T) {
	adm := admin(t)
	tag := uniq("merge")
	contact := func(email, title, phone string) int64 {
		return must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
			"first_name": "Grace", "last_name": "Hopper " + tag, "email": email, "job_title": title, "phone": phone})).ID()
	}
	// Two records of one person: other e-mails, one number written two ways.
	keep := contact(tag+"@navy.test", "Rear Admiral", "+1 202 555 0143")
	gone := contact(tag+"@yale.test", "", "(202) 555-0143")

	eventually(t, "phone candidates", func() error {
		r, err := adm.Do("GET", fmt.Sprintf("/contacts/%d/duplicates", keep), nil)
		if err != nil {
			return err
		}
		list, _ := r.JSON["data"].([]any)
		for _, p := range list {
			ids := p.(map[string]any)["ids"].([]any)
			if int64(ids[1].(float64)) == gone {
				return nil
			}
		}
		return fmt.Errorf("no pair with %d: %s", gone, r)
	})

	deals := map[int64]int64{}
	leads := map[int64]int64{}
	for _, id := range []int64{keep, gone} {
		must(t, http.StatusCreated)(adm.Do("POST", fmt.Sprintf("/contacts/%d/notes", id), map[string]any{"content": fmt.Sprint("note ", id)}))
		deals[id] = must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": fmt.Sprint("Deal of ", id), "contact_id": id})).ID()
		lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
			"first_name": "Grace", "last_name": "Hopper", "email": fmt.Sprintf("%s-%d@lead.test", tag, id)})).ID()
		must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead), map[string]any{"contact_id": id}))
		leads[id] = lead
	}

	// An e-mail with each address: the survivor takes the merged one's,
	// and its own former address becomes an alias in mail.
	for _, from := range []string{tag + "@navy.test", tag + "@yale.test"} {
		must(t, http.StatusCreated)(adm.Do("POST", "/emails", map[string]any{
			"message_id": "<" + uniq("merge") + "@mail.test>", "from": from, "to": []string{"office@crm.test"}, "subject": "Hello"}))
	}

	stack.Stop("deals", true)
	restored := false
	defer func() {
		if !restored {
			if err := stack.Restart(t.Context(), "deals"); err != nil {
				t.Errorf("restart deals: %v", err)
			}
		}
	}()
	r := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/contacts/%d/merge", keep), map[string]any{
		"merge_ids": []int64{gone}, "fields": map[string]any{"email": gone}}))
	mg := r.Data()
	mergeID := int64(mg["id"].(float64))
	if mg["status"] != "running" {
		t.Fatalf("merge with deals down: %s", r)
	}
	steps := map[string]string{}
	for _, s := range mg["steps"].([]any) {
		st := s.(map[string]any)
		steps[st["context"].(string)] = st["status"].(string)
	}
	if steps["deals"] != "pending" || steps["leads"] != "done" || steps["mail"] != "done" {
		t.Errorf("steps with deals down: %v", steps)
	}
	// The local step is done already.
	gr := must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/contacts/%d", gone), nil))
	if gr.JSON["code"] != "merged" || gr.JSON["merged_into"] != float64(keep) {
		t.Errorf("merged id: %s", gr)
	}
	// A retry of the same request answers the same merge.
	again := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/contacts/%d/merge", keep), map[string]any{
		"merge_ids": []int64{gone}, "fields": map[string]any{"email": gone}}))
	if int64(again.Data()["id"].(float64)) != mergeID {
		t.Errorf("retry answered another merge: %s", again)
	}

	if err := stack.StartProcess(t.Context(), "deals"); err != nil {
		t.Fatal(err)
	}
	if err := stack.WaitReady(t.Context(), "deals"); err != nil {
		t.Fatal(err)
	}
	restored = true
	deadline := time.Now().Add(90 * time.Second)
	for {
		m := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/merges/%d", mergeID), nil)).Data()
		if m["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("merge %d still running: %v", mergeID, m)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Everything is on the survivor.
	c := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", keep), nil)).Data()
	if c["email"] != tag+"@yale.test" || c["job_title"] != "Rear Admiral" {
		t.Errorf("survivor: %v", c)
	}
	linked := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d/linked-emails", keep), nil))
	if n := len(linked.JSON["data"].([]any)); n != 2 {
		t.Errorf("survivor has %d linked e-mails, want both addresses' 2: %s", n, linked)
	}
	notes := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d/notes", keep), nil))
	if n := len(notes.JSON["data"].([]any)); n != 2 {
		t.Errorf("survivor has %d notes, want 2", n)
	}
	for owner, id := range deals {
		d := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", id), nil)).Data()
		if d["contact_id"] != float64(keep) {
			t.Errorf("deal %d (of %d) points at %v, want %d", id, owner, d["contact_id"], keep)
		}
		h := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d/history", id), nil))
		viaMerge := 0
		for _, e := range h.JSON["data"].([]any) {
			if e.(map[string]any)["via"] == "merge" {
				viaMerge++
			}
		}
		want := 0
		if owner == gone {
			want = 1 // moved once, however often the step ran
		}
		if viaMerge != want {
			t.Errorf("deal %d: %d history entries via merge, want %d: %s", id, viaMerge, want, h)
		}
	}
	for owner, id := range leads {
		l := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/leads/%d", id), nil)).Data()
		if l["contact_id"] != float64(keep) {
			t.Errorf("lead %d (of %d) points at %v, want %d", id, owner, l["contact_id"], keep)
		}
	}
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		var body any
		if method == "PUT" {
			body = map[string]any{"first_name": "X", "last_name": "Y"}
		}
		r := must(t, http.StatusNotFound)(adm.Do(method, fmt.Sprintf("/contacts/%d", gone), body))
		if r.JSON["code"] != "merged" || r.JSON["merged_into"] != float64(keep) {
			t.Errorf("%s merged id: %s", method, r)
		}
	}
}
