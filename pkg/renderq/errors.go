package renderq

import (
	"fmt"
	"time"

	"github.com/opencrm/crm/pkg/fault"
)

// Reason says why a render could not be served now.
type Reason string

// The reasons of an UnavailableError.
const (
	// NoWorker: no live render worker listens on the queue.
	NoWorker Reason = "no_worker"
	// RendererDown: the worker could not run the renderer (Chromium missing
	// or crashed and not restartable).
	RendererDown Reason = "renderer_unavailable"
	// TimedOut: the job did not finish within the wait.
	TimedOut Reason = "timeout"
)

// UnavailableError means "try again later": the HTTP layer answers 503 with
// Retry-After. errors.As(err, **fault.Error) sees it as an unavailable
// fault, so problem.From renders it and a handler just returns it.
type UnavailableError struct {
	Reason     Reason
	RetryAfter time.Duration
	Detail     string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("renderq: %s: %s", e.Reason, e.Detail)
}

// As lets errors.As (and so problem.From) see the error as an unavailable
// fault (503).
func (e *UnavailableError) As(target any) bool {
	f, ok := target.(**fault.Error)
	if !ok {
		return false
	}
	*f = fault.New(fault.KindUnavailable, "upstream_unavailable", e.publicDetail())
	(*f).RetryAfter = retryAfterSeconds(e.RetryAfter)
	return true
}

// retryAfterSeconds is a Retry-After of at least one second.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(d.Round(time.Second)/time.Second))
}

// publicDetail is what an API client may read: no hostnames or internals.
func (e *UnavailableError) publicDetail() string {
	switch e.Reason {
	case NoWorker:
		return "The document renderer is not running. Try again shortly."
	case RendererDown:
		return "The document renderer is unavailable. Try again shortly."
	default:
		return "Rendering the document took too long. Try again shortly."
	}
}

// FailedError means the worker gave up on the job (bad input, or every retry
// failed). It maps to a 500 through problem.From's default.
type FailedError struct {
	Code    string
	Message string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("renderq: render failed (%s): %s", e.Code, e.Message)
}

// BusyError means the user already has the maximum of renders in flight:
// the HTTP layer answers 429 rate_limited with Retry-After.
type BusyError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("renderq: %d renders already in flight for this user", e.Limit)
}

// As lets problem.From see the error as a rate-limited fault (429).
func (e *BusyError) As(target any) bool {
	f, ok := target.(**fault.Error)
	if !ok {
		return false
	}
	*f = fault.RateLimited(retryAfterSeconds(e.RetryAfter),
		fmt.Sprintf("at most %d documents may be rendering for you at once; retry when one is done", e.Limit))
	return true
}

// TooLongError means the worker refused the document for its content: more
// pages than the worker's cap, or a layout that did not finish within the
// worker's print timeout. Retrying cannot help; the HTTP layer answers 422
// document_too_long.
type TooLongError struct {
	// MaxPages is the cap that was exceeded; 0 when the print timed out.
	MaxPages int
}

func (e *TooLongError) Error() string {
	if e.MaxPages == 0 {
		return "renderq: document too heavy to print within the time limit"
	}
	return fmt.Sprintf("renderq: document has more than %d pages", e.MaxPages)
}

// As lets problem.From see the error as an invalid-input fault (422)
// without fields.
func (e *TooLongError) As(target any) bool {
	f, ok := target.(**fault.Error)
	if !ok {
		return false
	}
	detail := fmt.Sprintf("the document has more than %d pages, the most that can be rendered; shorten it", e.MaxPages)
	if e.MaxPages == 0 {
		detail = "the document's layout is too heavy to render in time (very long or very large content); shorten or simplify it"
	}
	*f = fault.New(fault.KindInvalid, "document_too_long", detail)
	return true
}
