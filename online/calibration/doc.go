// Package calibration keeps what the online learner learned of each
// series' prediction intervals across restarts, kills and rebalances: its
// layout (Snapshot, Series), where it is kept (Store: a directory of files,
// FileStore, or a compacted state topic, TopicStore) and the rules that
// merge what several replicas kept (Merge, NewerState, PoolSource).
//
// # Why
//
// What the online step learned of each series' intervals (its thresholds,
// how far its warm-up got) would otherwise start again from the serving
// version's quantiles after every deploy, restart or rebalance, and a
// series whose errors differ from the others' would publish bands of the
// wrong width for its first few dozen forecasts.
//
// # The rules
//
// Each replica saves a Snapshot of its calibration every
// online.calibration_every and when its learner stops. A starting replica
// reads every replica's (Store.Read) and keeps, per series, the state seen
// last (Merge): after a rebalance, the one of the replica that had the
// series last; a fresh state (a replica the series reached that had not
// yet taken its calibration) loses to one seen within a lookback and
// horizon of it (NewerState). A series idle for a lookback and horizon is
// left out. The pooled coverage correction comes from the replica's own
// snapshot, else from the newest that has one (PoolSource). A replica's
// snapshot that holds only idle series and that nobody wrote for GoneAfter
// (a pod gone with an old deploy) is dropped. A running replica reads the
// others' too, so that a series a rebalance moves to it goes on from the
// replica that had it.
//
// # Stores
//
// FileStore keeps one file per replica under a directory
// (intervals-<replica>.gob, replaced atomically), for replicas that share
// a disk. TopicStore keeps the same on a compacted topic (StateStore, in
// production broadcast.States on topics.state): one record per series,
// keyed by the series and written when its state changed, and one pooled
// record per replica keyed "\x00pool\x00<replica>". It groups the records
// by the replica that wrote them, so that each group is what that
// replica's file would be, and the rules above give the same bands bit for
// bit. What compaction would lose the writer guards: a state is written
// only when it is newer than the topic's (NewerState), and a series idle
// for a lookback and horizon is deleted by a tombstone. Every record
// starts with its layout version; one this build cannot read is skipped
// and counted (TopicStore.OnSkipped), never a crash.
//
// calibration imports nothing of FreqLens: the learner (package online)
// turns its state into a Snapshot and back.
package calibration
