package renderq

import (
	"fmt"
	"net/http"
	"time"

	"github.com/opencrm/crm/pkg/problem"
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
// Retry-After. problem.From and errors.As(err, **problem.Error) turn it into
// problem.Unavailable, so a handler just calls problem.Write.
type UnavailableError struct {
	Reason     Reason
	RetryAfter time.Duration
	Detail     string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("renderq: %s: %s", e.Reason, e.Detail)
}

// As lets errors.As (and so problem.From) see the error as a 503 problem.
func (e *UnavailableError) As(target any) bool {
	p, ok := target.(**problem.Error)
	if !ok {
		return false
	}
	*p = problem.Unavailable(e.publicDetail(), max(1, int(e.RetryAfter.Round(time.Second)/time.Second)))
	return true
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

// As lets problem.From see the error as a 429 problem.
func (e *BusyError) As(target any) bool {
	p, ok := target.(**problem.Error)
	if !ok {
		return false
	}
	*p = problem.RateLimited(max(1, int(e.RetryAfter.Round(time.Second)/time.Second)))
	(*p).Detail = fmt.Sprintf("at most %d documents may be rendering for you at once; retry when one is done", e.Limit)
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

// As lets problem.From see the error as a 422 problem.
func (e *TooLongError) As(target any) bool {
	p, ok := target.(**problem.Error)
	if !ok {
		return false
	}
	detail := fmt.Sprintf("the document has more than %d pages, the most that can be rendered; shorten it", e.MaxPages)
	if e.MaxPages == 0 {
		detail = "the document's layout is too heavy to render in time (very long or very large content); shorten or simplify it"
	}
	*p = &problem.Error{Status: http.StatusUnprocessableEntity, Code: "document_too_long",
		Title: http.StatusText(http.StatusUnprocessableEntity), Detail: detail}
	return true
}
