package tracing

import (
	"context"
	"maps"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Enqueue enqueues task under a producer span, carrying that span's W3C
// trace context in the task message's headers, so the job continues the
// trace that enqueued it (see Middleware). Headers rather than the JSON
// payload: asynq derives Unique locks from the payload, and render jobs
// their cache key, so a per-request value there would defeat both.
func Enqueue(ctx context.Context, c *asynq.Client, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error) {
	ctx, span := Start(ctx, task.Type()+" publish", trace.SpanKindProducer)
	span.SetAttributes(attribute.String("messaging.system", "asynq"), attribute.String("messaging.operation.type", "publish"))
	h := maps.Clone(task.Headers())
	if h == nil {
		h = map[string]string{}
	}
	maps.Copy(h, Inject(ctx))
	info, err := c.EnqueueContext(ctx, asynq.NewTaskWithHeaders(task.Type(), task.Payload(), h), opts...)
	if info != nil {
		span.SetAttributes(attribute.String("messaging.destination.name", info.Queue), attribute.String("messaging.message.id", info.ID))
	}
	End(span, err)
	return info, err
}

// Middleware runs every job under a consumer span that continues the trace
// carried in its headers (a new trace when there is none: a scheduled
// sweep).
func Middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		ctx, span := Start(Extract(ctx, t.Headers()), t.Type()+" process", trace.SpanKindConsumer)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("messaging.system", "asynq"), attribute.String("messaging.operation.type", "process"))
			if id, ok := asynq.GetTaskID(ctx); ok {
				span.SetAttributes(attribute.String("messaging.message.id", id))
			}
			if q, ok := asynq.GetQueueName(ctx); ok {
				span.SetAttributes(attribute.String("messaging.destination.name", q))
			}
		}
		err := next.ProcessTask(ctx, t)
		End(span, err)
		return err
	})
}
