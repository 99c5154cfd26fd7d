package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/rendertest"
)

// buildWorker compiles this command once per test.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "render")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startWorker runs the binary as a subprocess; cleanup stops it with SIGTERM
// (graceful: the worker closes Chromium) or kills it if it hangs.
func startWorker(t *testing.T, bin string, env rendertest.Env) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"REDIS_URL="+env.Config.RedisURL,
		"RENDER_QUEUE_PREFIX="+env.Config.Queues.Prefix,
		"ADDR=127.0.0.1:0",
		"LOG_LEVEL=warn",
		"RENDER_TABS=2",
	)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("worker %d logs:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	return cmd
}

// TestWorkerKilledMidJob kills the worker with SIGKILL while it prints, starts
// another, and checks the waiting client still gets the file.
func TestWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	bin := buildWorker(t)
	first := startWorker(t, bin, env)
	env.WaitForWorker(t)

	env.Config.Wait = 45 * time.Second
	client := env.Client(t)
	// A long contract, so the print is still running when the kill lands.
	job := fixture.Contract(renderq.PDF, 150)
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := client.Render(t.Context(), job, renderq.Interactive, "")
		done <- result{data, err}
	}()

	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	queue := env.Config.Queues.Name(renderq.Interactive)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := insp.GetTaskInfo(queue, env.Config.Settle(job).Key())
		if err == nil && info.State == asynq.TaskStateActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never became active")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	startWorker(t, bin, env)

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("render after the kill: %v", r.err)
		}
		if !bytes.HasPrefix(r.data, []byte("%PDF-")) {
			t.Fatal("not a PDF")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("client did not return")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Render(ctx, job, renderq.Interactive, ""); err != nil {
		t.Errorf("cached download after recovery: %v", err)
	}
}
