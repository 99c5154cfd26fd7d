package k8s_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/renderq"
)

// pendingList is where asynq keeps a queue's waiting tasks: a Redis list,
// whose length is what KEDA's redis scaler reads.
func pendingList(queue string) string { return fmt.Sprintf("asynq:{%s}:pending", queue) }

// TestRenderScalesOnItsQueues: the ScaledObject watches the pending list of
// each render queue under the default prefix, at the Redis of crm-config.
func TestRenderScalesOnItsQueues(t *testing.T) {
	t.Parallel()
	r := load(t, "k8s/overlays/production")
	var got []string
	for _, s := range r.scaled {
		if s.Spec.ScaleTargetRef.Name != "render" {
			continue
		}
		for _, tr := range s.Spec.Triggers {
			if tr.Type != "redis" || tr.Metadata["address"] != "redis:6379" || tr.Metadata["databaseIndex"] != "0" || tr.Metadata["listLength"] == "" {
				t.Errorf("trigger %s %v: want a redis trigger on redis:6379 db 0 (crm-config's REDIS_URL) with a listLength", tr.Type, tr.Metadata)
			}
			got = append(got, tr.Metadata["listName"])
		}
	}
	var want []string
	for _, q := range (renderq.Queues{Prefix: renderq.DefaultPrefix}).All() {
		want = append(want, pendingList(q))
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lists the render ScaledObject watches (-want +got):\n%s", diff)
	}
}

// TestWebhooksScaleOnTheirQueue: the webhooks ScaledObject watches the
// pending list of the delivery queue (WEBHOOKS_QUEUE's default) and CPU.
func TestWebhooksScaleOnTheirQueue(t *testing.T) {
	t.Parallel()
	r := load(t, "k8s/overlays/production")
	var got []string
	for _, s := range r.scaled {
		if s.Spec.ScaleTargetRef.Name != "webhooks" {
			continue
		}
		for _, tr := range s.Spec.Triggers {
			switch tr.Type {
			case "redis":
				if tr.Metadata["address"] != "redis:6379" || tr.Metadata["databaseIndex"] != "0" || tr.Metadata["listLength"] == "" {
					t.Errorf("trigger %v: want redis:6379 db 0 (crm-config's REDIS_URL) with a listLength", tr.Metadata)
				}
				got = append(got, tr.Metadata["listName"])
			case "cpu":
				got = append(got, "cpu")
			default:
				t.Errorf("unexpected trigger %s", tr.Type)
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{pendingList("webhooks"), "cpu"}, got); diff != "" {
		t.Errorf("what the webhooks ScaledObject watches (-want +got):\n%s", diff)
	}
}

// TestAsynqPendingListName proves pendingList against the asynq version
// this repository uses: a task enqueued and not yet processed is one
// element of that list.
func TestAsynqPendingListName(t *testing.T) {
	t.Parallel()
	url := os.Getenv("RENDER_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/9"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	queue := "k8stest-" + hex.EncodeToString(b)

	client := asynq.NewClientFromRedisClient(rdb)
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	t.Cleanup(func() { _ = inspector.DeleteQueue(queue, true) })
	if _, err := client.Enqueue(asynq.NewTask("probe", nil), asynq.Queue(queue)); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	n, err := rdb.LLen(context.Background(), pendingList(queue)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("LLEN %s = %d after one enqueue, want 1", pendingList(queue), n)
	}
}
