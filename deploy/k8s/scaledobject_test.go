package k8s_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/pkg/testredis"
)

// pendingList is where asynq keeps a queue's waiting tasks: a Redis list,
// whose length is what KEDA's redis scaler reads.
func pendingList(queue string) string { return fmt.Sprintf("asynq:{%s}:pending", queue) }

// watched returns what target's ScaledObject scales on: the list of each
// redis trigger (which must be crm-config's Redis, redis:6379 db 0, with a
// listLength) and "cpu" for a CPU trigger, sorted.
func watched(t *testing.T, r rendered, target string) []string {
	t.Helper()
	var got []string
	for _, s := range r.scaled {
		if s.Spec.ScaleTargetRef.Name != target {
			continue
		}
		for _, tr := range s.Spec.Triggers {
			switch tr.Type {
			case "redis":
				if tr.Metadata["address"] != "redis:6379" || tr.Metadata["databaseIndex"] != "0" || tr.Metadata["listLength"] == "" {
					t.Errorf("%s trigger %v: want redis:6379 db 0 (crm-config's REDIS_URL) with a listLength", target, tr.Metadata)
				}
				got = append(got, tr.Metadata["listName"])
			case "cpu":
				got = append(got, "cpu")
			default:
				t.Errorf("%s: unexpected trigger %s", target, tr.Type)
			}
		}
	}
	slices.Sort(got)
	return got
}

// TestRenderScalesOnItsQueues: the ScaledObject watches the pending list of
// each render queue under the default prefix, at the Redis of crm-config.
func TestRenderScalesOnItsQueues(t *testing.T) {
	t.Parallel()
	var want []string
	for _, q := range (renderq.Queues{Prefix: renderq.DefaultPrefix}).All() {
		want = append(want, pendingList(q))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, watched(t, load(t, "k8s/overlays/production"), "render")); diff != "" {
		t.Errorf("lists the render ScaledObject watches (-want +got):\n%s", diff)
	}
}

// TestWebhooksScaleOnTheirQueue: the webhooks ScaledObject watches the
// pending list of the delivery queue (WEBHOOKS_QUEUE's default) and CPU.
func TestWebhooksScaleOnTheirQueue(t *testing.T) {
	t.Parallel()
	want := []string{pendingList("webhooks"), "cpu"}
	if diff := cmp.Diff(want, watched(t, load(t, "k8s/overlays/production"), "webhooks")); diff != "" {
		t.Errorf("what the webhooks ScaledObject watches (-want +got):\n%s", diff)
	}
}

// TestAsynqPendingListName proves pendingList against the asynq version
// this repository uses: a task enqueued and not yet processed is one
// element of that list.
func TestAsynqPendingListName(t *testing.T) {
	t.Parallel()
	rdb := testredis.Client(t, "RENDER_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
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
