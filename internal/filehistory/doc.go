// Package filehistory keeps a session's file history and rewinds it
// (SPEC F1–F4), in Claude Code's format so either program can rewind the
// other's sessions.
//
// Backups. Before a tool changes or creates a file, History.BeforeChange
// copies what the file holds to <home>/file-history/<sessionId>/<name>,
// where name is the first 16 hex digits of the SHA-256 of the file's
// absolute path, "@v" and a version that grows by one per backup of that
// file. The copy keeps the file's mode. A file that did not exist is
// recorded with no backup file: rewinding past its creation deletes it.
//
// Snapshots. Each user message gets a snapshot (History.Prompt): every
// tracked file → the backup holding its state when the message was sent.
// A file that changed since its last backup gets a new version; one that
// did not shares the backup. A file first changed during the turn joins
// the turn's snapshot with its state before that change, so a file is
// backed up at most once per turn. Snapshots are written to the
// transcript as Claude Code's file-history-snapshot side records, keyed by
// the user message's uuid; a change during the turn rewrites the snapshot
// as an update (isSnapshotUpdate). Load reads them back on resume.
//
// Shell changes. Claude Code backs up only what its editing tools change.
// TrackShell wraps the Bash tool to catch what commands change too: a
// Shadow keeps copies of the project's files (gitignore-aware, bounded in
// files, bytes and time), refreshed before each command from what changed
// since the last look, and compared with the tree after it; every file
// the command created, changed or deleted joins the snapshot with its
// state from before the command. On Linux the Shadow watches the
// project's folders (inotify) after its first look, so a look handles
// only the paths that changed; elsewhere, or past the user's watch
// limit, each look walks the tree. Git is never touched.
//
// Rewind. History.Plan says what rewinding the code to a message would do
// (which files are restored, recreated or deleted, with a line count of
// each change); History.Rewind first records the current state as a
// snapshot of its own (so the rewind can itself be rewound), then copies
// the backups back and deletes the files created since. Rewinding the
// conversation is ConversationPoint plus a last-prompt record naming the
// message before the chosen one as the leaf.
package filehistory
