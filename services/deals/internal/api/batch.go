package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// batchKey is a batch's Idempotency-Key, kept apart from the internal
// create's keys (which the qualification saga chooses) and per user, so
// one caller's key never answers another's batch.
func batchKey(r *http.Request) (string, error) {
	k, err := idempotency.Key(r)
	if k == "" || err != nil {
		return "", err
	}
	return "batch:" + strconv.FormatInt(auth.FromContext(r.Context()).UserID(), 10) + ":" + k, nil
}

// answerBatch writes a batch's results in input order.
func answerBatch(w http.ResponseWriter, done idempotency.Done[[]deals.Result], rt route.Route) {
	idempotency.MarkReplayed(w, done.Replayed)
	msg := rt.Message
	if msg != "" {
		msg = fmt.Sprintf("%d %s", len(done.Value), msg)
	}
	httpx.JSON(w, http.StatusOK, batchapi.Results[dealsapi.Deal]{Success: true, Data: done.Value, Message: msg})
}

func (h *handlers) batchCreate(w http.ResponseWriter, r *http.Request) error {
	key, err := batchKey(r)
	if err != nil {
		return err
	}
	var in batchapi.Batch[dealsapi.DealInput]
	if err := httpx.Decode(w, r, &in, dealsapi.DealBatch.Create.Limit()); err != nil {
		return err
	}
	owner := auth.FromContext(r.Context()).UserID()
	done, err := h.svc.BatchCreate(r.Context(), key, in.Inputs, &owner)
	if err != nil {
		return err
	}
	answerBatch(w, done, dealsapi.DealBatch.Create)
	return nil
}

func (h *handlers) batchUpdate(w http.ResponseWriter, r *http.Request) error {
	key, err := batchKey(r)
	if err != nil {
		return err
	}
	var in batchapi.Batch[dealsapi.DealUpdate]
	if err := httpx.Decode(w, r, &in, dealsapi.DealBatch.Update.Limit()); err != nil {
		return err
	}
	done, err := h.svc.BatchUpdate(r.Context(), key, in.Inputs)
	if err != nil {
		return err
	}
	answerBatch(w, done, dealsapi.DealBatch.Update)
	return nil
}

func (h *handlers) batchUpsert(w http.ResponseWriter, r *http.Request) error {
	key, err := batchKey(r)
	if err != nil {
		return err
	}
	var in batchapi.Upsert[dealsapi.DealInput]
	if err := httpx.Decode(w, r, &in, dealsapi.DealBatch.Upsert.Limit()); err != nil {
		return err
	}
	owner := auth.FromContext(r.Context()).UserID()
	done, err := h.svc.BatchUpsert(r.Context(), key, in.IDProperty, in.Inputs, &owner)
	if err != nil {
		return err
	}
	answerBatch(w, done, dealsapi.DealBatch.Upsert)
	return nil
}

func (h *handlers) batchRead(w http.ResponseWriter, r *http.Request) error {
	var in batchapi.Read
	if err := httpx.Decode(w, r, &in, dealsapi.DealBatch.Read.Limit()); err != nil {
		return err
	}
	res, err := h.svc.BatchRead(r.Context(), in)
	if err != nil {
		return err
	}
	answerBatch(w, idempotency.Done[[]deals.Result]{Value: res}, dealsapi.DealBatch.Read)
	return nil
}

func (h *handlers) batchDelete(w http.ResponseWriter, r *http.Request) error {
	key, err := batchKey(r)
	if err != nil {
		return err
	}
	var in batchapi.Delete
	if err := httpx.Decode(w, r, &in, dealsapi.DealBatch.Delete.Limit()); err != nil {
		return err
	}
	done, err := h.svc.BatchDelete(r.Context(), key, in.IDs)
	if err != nil {
		return err
	}
	answerBatch(w, done, dealsapi.DealBatch.Delete)
	return nil
}
