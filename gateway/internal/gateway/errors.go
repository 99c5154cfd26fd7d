package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/opencrm/crm/pkg/problem"
)

// errorHandler renders every error as problem+json: the gateway's own
// problems, fiber's and fasthttp's errors (header too large, timeouts,
// malformed requests), and anything else as a bare 500.
func (g *Gateway) errorHandler(c *fiber.Ctx, err error) error {
	p := toProblem(err)
	st := state(c)
	if st.requestID == "" { // fasthttp-level error: base did not run
		st.requestID = requestID(c)
		c.SetUserContext(problem.WithRequestID(context.Background(), st.requestID))
		g.securityHeaders(c)
	}
	if p.Status >= 500 {
		g.log.LogAttrs(c.UserContext(), slog.LevelError, "request failed",
			slog.String("error", err.Error()), slog.Int("status", p.Status),
			slog.String("method", c.Method()), slog.String("route", st.route))
	}
	h := &c.Response().Header
	for k, vs := range p.Header {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	body, merr := json.Marshal(problem.BodyOf(p, st.requestID))
	if merr != nil {
		return merr
	}
	c.Status(p.Status)
	h.Set(fiber.HeaderContentType, problem.ContentType)
	return c.Send(append(body, '\n'))
}
func toProblem(err error) *problem.Error {
	var p *problem.Error
	if errors.As(err, &p) {
		return p
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return problem.NotFound("route")
		case fiber.StatusMethodNotAllowed:
			return &problem.Error{Status: 405, Code: "method_not_allowed", Title: "Method Not Allowed", Detail: "method not allowed"}
		case fiber.StatusRequestEntityTooLarge:
			return problem.TooLarge("the request body is too large")
		case fiber.StatusRequestHeaderFieldsTooLarge:
			return headersTooLarge()
		case fiber.StatusRequestTimeout:
			return &problem.Error{Status: 408, Code: "request_timeout", Title: "Request Timeout", Detail: "the request was not received in time"}
		case fiber.StatusBadRequest:
			return problem.BadRequest("bad_request", "the request could not be parsed")
		}
	}
	return problem.Internal()
}

// headersTooLarge answers a request whose request line and header fields
// do not fit in readBufferSize: 431 whichever part is long, a megabyte
// token or a query of thousands of parameters. 414 would name a long
// target, but fasthttp refuses the block before parsing it and keeps no
// part of it, so the gateway cannot tell which part overflowed; one answer
// for the one limit is what it can state truthfully. Only the detail says
// what the limit covers.
func headersTooLarge() *problem.Error {
	return &problem.Error{Status: http.StatusRequestHeaderFieldsTooLarge, Code: "request_header_fields_too_large",
		Title:  http.StatusText(http.StatusRequestHeaderFieldsTooLarge),
		Detail: fmt.Sprintf("the request line and header fields together exceed %d bytes", readBufferSize)}
}
