package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentloop/agentloop/session/pgstore"
)

// ErrFenced is the error of a write refused because the node no longer
// holds the session's lease (see pgstore.ErrFenced); a run that gets it
// stops without writing more.
var ErrFenced = pgstore.ErrFenced

// ErrSelfFenced is the cause of a claim's context when its node could not
// renew its leases for Config.SelfFence.
var ErrSelfFenced = errors.New("this node could not renew its session leases in time and stopped its runs before another node could take them over")

// ErrLeaseLost is the cause of a claim's context when a heartbeat found
// that another node holds the session now.
var ErrLeaseLost = fmt.Errorf("the session was taken over by another node: %w", ErrFenced)

// ErrClosed is the cause of a claim's context when its node was closed.
var ErrClosed = errors.New("the cluster node was closed")

// The NOTIFY channels. Payloads are short names, never the data.
const (
	chanRuns   = "al_runs"   // a run was queued: session id
	chanCmd    = "al_cmd"    // a command for a run: owner node id
	chanEvents = "al_events" // an event was stored: "<session>:<seq>"
)

// Node is one gateway process's membership in the cluster: it claims
// runs, renews the leases of the sessions it runs, delivers the commands
// sent to its runs, and wakes followers of sessions' events.
type Node struct {
	cfg   Config
	store *pgstore.Store
	pool  *pgxpool.Pool
	id    string

	mu     sync.Mutex
	claims map[string]*Claim // by run id
	tails  map[string][]chan struct{}

	wakeRuns  chan struct{}
	deliverMu sync.Mutex
	// holdRenewals makes heartbeats skip the database, as if it could not
	// be reached: tests pause a node's leases this way.
	holdRenewals atomic.Bool

	// ttlStore is store with leases of LeaseTTL: the sessions the node
	// opens outside its claims; held counts those open now, whose leases
	// the heartbeat renews.
	ttlStore *pgstore.Store
	held     atomic.Int64

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New joins the cluster through store (whose Owner names this node),
// bringing the cluster's tables up to date, and starts the node's
// heartbeat and listener. Close stops them.
func New(ctx context.Context, store *pgstore.Store, cfg *Config) (*Node, error) {
	if err := pgstore.Migrate(ctx, store.Pool(), "cluster", steps); err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg.withDefaults(), store: store, pool: store.Pool(), id: store.Owner(),
		claims: map[string]*Claim{}, tails: map[string][]chan struct{}{},
		wakeRuns: make(chan struct{}, 1),
	}
	n.ttlStore = store.WithLeaseTTL(n.cfg.LeaseTTL)
	if n.cfg.SelfFence >= n.cfg.LeaseTTL {
		return nil, fmt.Errorf("cluster: SelfFence %s must be shorter than LeaseTTL %s", n.cfg.SelfFence, n.cfg.LeaseTTL)
	}
	bg, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.wg.Go(func() { n.heartbeat(bg) })
	n.wg.Go(func() { n.listen(bg) })
	if n.cfg.EventRetention >= 0 {
		n.wg.Go(func() { n.prune(bg) })
	}
	return n, nil
}

// ID returns the node's name, the owner of the leases it takes.
func (n *Node) ID() string { return n.id }

// Store returns the session store the node writes through.
func (n *Node) Store() *pgstore.Store { return n.store }

// Close stops the node's heartbeat and listener and cancels its claims
// (cause ErrClosed). Their leases are left to expire, so another node
// resumes the runs; call Release first for the runs that ended.
func (n *Node) Close() error {
	n.stop()
	n.wg.Wait()
	n.mu.Lock()
	claims := n.claims
	n.claims = map[string]*Claim{}
	n.mu.Unlock()
	for _, c := range claims {
		c.cancel(ErrClosed)
	}
	return nil
}

// heartbeat renews the node's leases every Heartbeat, and fences the
// claims whose leases it could not renew for SelfFence.
func (n *Node) heartbeat(ctx context.Context) {
	for {
		if err := n.cfg.Clock.Sleep(ctx, n.cfg.Heartbeat); err != nil {
			return
		}
		n.beat(ctx)
	}
}

// beat is one heartbeat. The self-fence check comes first: a node that
// was paused (SIGSTOP, a long GC, a frozen VM) learns it on waking, before
// it renews anything.
func (n *Node) beat(ctx context.Context) {
	start := n.cfg.Clock.Now()
	n.selfFence(start)
	// The claims to check are those made before the renewal: one made
	// while it ran is not in its result, and is not lost.
	claims := n.active()
	if len(claims) == 0 && n.held.Load() == 0 {
		return
	}
	if n.holdRenewals.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, n.cfg.Heartbeat)
	defer cancel()
	rows, err := n.pool.Query(rctx, `UPDATE sessions SET lease_expires = now() + $2::bigint * interval '1 millisecond'
		WHERE owner = $1 AND lease_expires IS NOT NULL RETURNING id, epoch`, n.id, n.cfg.LeaseTTL.Milliseconds())
	if err != nil {
		n.selfFence(n.cfg.Clock.Now())
		return
	}
	held := map[string]int64{}
	var id string
	var epoch int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &epoch}, func() error { held[id] = epoch; return nil }); err != nil {
		n.selfFence(n.cfg.Clock.Now())
		return
	}
	for _, c := range claims {
		if e, ok := held[c.Run.SessionID]; !ok || e != c.Epoch {
			n.drop(c, ErrLeaseLost)
			continue
		}
		c.renewed.Store(start.UnixNano())
	}
	n.deliverCommands(ctx)
}

// selfFence cancels the claims not renewed since now - SelfFence.
func (n *Node) selfFence(now time.Time) {
	for _, c := range n.active() {
		if now.Sub(time.Unix(0, c.renewed.Load())) >= n.cfg.SelfFence {
			n.drop(c, ErrSelfFenced)
		}
	}
}

func (n *Node) active() []*Claim {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Claim, 0, len(n.claims))
	for _, c := range n.claims {
		out = append(out, c)
	}
	return out
}

// drop forgets a claim and cancels its context with cause.
func (n *Node) drop(c *Claim, cause error) {
	n.mu.Lock()
	if n.claims[c.Run.ID] == c {
		delete(n.claims, c.Run.ID)
	}
	n.mu.Unlock()
	c.cancel(cause)
}

// listen holds one connection LISTENing to the cluster's channels and
// turns notifications into wake-ups; without it (the database away) the
// Poll timers still find everything.
func (n *Node) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := n.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		_ = err // the database is away: retry after a poll interval
		if n.cfg.Clock.Sleep(ctx, n.cfg.Poll) != nil {
			return
		}
	}
}

func (n *Node) listenOnce(ctx context.Context) error {
	conn, err := n.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection in LISTEN state goes back to no pool: it is ours.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	for _, ch := range []string{chanRuns, chanCmd, chanEvents} {
		if _, err := pc.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	for {
		note, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch note.Channel {
		case chanRuns:
			signal(n.wakeRuns)
		case chanCmd:
			if note.Payload == n.id {
				n.deliverCommands(ctx)
			}
		case chanEvents:
			sid, _, _ := cut(note.Payload)
			n.wakeTails(sid)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func cut(s string) (before, after string, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
