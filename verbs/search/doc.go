// Package search walks a workspace's tree in parallel for fs.search and
// fs.find: which entries a walk visits (hidden entries, .gitignore and
// .ignore files, include and exclude globs, a depth bound), how a file's
// content is searched for a pattern (a literal found with bytes.Index, or
// a regular expression run only on the lines that hold its required
// literal), and when a walk stops (a count, a byte budget, a deadline).
//
// Every directory and file is opened through verbs/confine (a Dir of the
// walk, from its parent's descriptor, never through a symbolic link): the
// hub's state directory, its configuration and secret files are neither
// walked nor opened, whatever the tree holds. Symbolic links are not
// followed. docs/search.md describes the verbs for their users.
package search
