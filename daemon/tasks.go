package daemon

import (
	"context"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/tasks"
	"github.com/wardenmcp/warden/writes"
)

// taskSweepEvery is how often expired tasks are removed and the tasks of
// instances that died are failed.
const taskSweepEvery = time.Minute

// deadSweepEvery is how often, on a shared store, the writes that
// instances which died left in flight latch their servers (one read of the
// writes in flight when there are none), so that the latch shows within
// seconds rather than at the next write to the server.
const deadSweepEvery = 5 * time.Second

// openTasks keeps the tasks in the daemon's store, bounded by cfg (read
// at start: a reload leaves the bounds as they are). The tasks a previous
// run left running fail as unknown outcomes, a non-read one latching its
// server; then, until ctx ends, expired tasks are removed and those left
// by instances that died fail likewise, every taskSweepEvery, and on a
// shared store the writes dead instances left in flight latch their servers,
// every deadSweepEvery (first, so that a task's latch is not made twice).
func (d *Daemon) openTasks(ctx context.Context, cfg config.Tasks) (*tasks.Tasks, error) {
	ts := tasks.New(d.store, tasks.Options{Retention: cfg.Retention, MaxPerServer: cfg.MaxPerServer, MaxPerCaller: cfg.MaxPerCaller})
	if failed, err := ts.Recover(ctx, d.taskLost); err != nil {
		return nil, err
	} else if len(failed) > 0 {
		d.log.Warn("tasks left running by the last run failed as unknown outcomes", "tasks", len(failed))
	}
	go func() {
		t := time.NewTicker(deadSweepEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if d.store.Shared() {
				if servers, err := d.ledger.RecoverDead(ctx); err != nil {
					d.log.Warn("latching the writes instances that stopped left in flight failed; retried in seconds", "err", err)
				} else if len(servers) > 0 {
					d.log.Warn("writes in flight on instances that stopped latched their servers", "servers", servers)
				}
			}
			if n%int(taskSweepEvery/deadSweepEvery) != 0 {
				continue
			}
			if _, err := ts.Sweep(ctx, d.taskAbandoned); err != nil {
				d.log.Warn("removing expired tasks failed; retried in a minute", "err", err)
			}
			if _, err := ts.RecoverDead(ctx, d.taskLost); err != nil {
				d.log.Warn("failing the tasks of instances that stopped failed; retried in a minute", "err", err)
			}
		}
	}()
	return ts, nil
}

// taskAbandoned latches the server of t, a non-read task its upstream ran
// and its client left until it expired, unless the upstream says it
// finished: whether its call took effect is unknown.
func (d *Daemon) taskAbandoned(ctx context.Context, t tasks.Task) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !t.InDoubt() || d.gw.TaskFinished(ctx, t.Server, t.Upstream) {
		return nil
	}
	return d.gw.TaskOutcomeUnknown(t.Server, t.Tool, t.ArgsSHA256, t.ID, writes.ReasonAbandoned)
}

// taskLost latches the server of t, a non-read task whose instance died
// while it ran: whether its call took effect is unknown.
func (d *Daemon) taskLost(t tasks.Task) error {
	if !t.InDoubt() {
		return nil
	}
	return d.gw.TaskOutcomeUnknown(t.Server, t.Tool, t.ArgsSHA256, t.ID, writes.ReasonUpstreamLost)
}
