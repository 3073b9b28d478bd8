// Package cluster is apserver's second backend for runs (docs/cluster.md):
// the run event log in PostgreSQL (Store, a runner.RunStore) and the work
// queue on River, a job queue on PostgreSQL (Queue, a runner.WorkQueue).
// An event and the work it implies are committed in one transaction
// (River's InsertManyTx on the same pgx transaction), and each append is
// announced with NOTIFY on channel apserver_run_events. It also owns the
// schema (Migrate: apserver's tables and River's) and the operator's view
// (Status). Workers (Worker) claim the jobs and drive runs; editor sides
// that drive their runs themselves hold a lease on each (Lease) and take
// up the runs of a process that died (KeepDriving). The runs' token usage
// lives with them (Store is a runner.UsageRecorder, table
// apserver_run_usage), so that a worker's tokens count against the editor
// side's budgets.
//
// cluster sits beside server: it may import runner, runs, store and
// protocol, never server, session or cmd.
package cluster
