// Package confine is the room the verbs' paths cannot leave: a directory
// tree (a Root) every path of a verb is confined to, and the hub's state
// directory, configuration and secret files, which no path may reach
// wherever they lie. It is the security-critical part of the verbs, kept
// small enough to read in one sitting; everything else in package verbs
// (what a verb does with a file, sessions, caches, processes) goes through
// it. docs/security.md states the guarantees for operators.
//
// # Paths
//
// A path is workspace-relative, slash-separated printable ASCII. Locate is
// the one gate every path goes through:
//
//  1. CleanPath, the lexical half, refuses an empty, absolute, backslashed,
//     NUL, non-ASCII or control-character path, "." and ".." segments, more
//     than Limits.MaxDepth segments and a segment over Limits.MaxSegment
//     bytes. The deny list (Options.Deny, and the protected directories
//     that lie in the root) refuses a path by its spelling: an early,
//     friendly answer saying the path is the hub's state, not the defence.
//  2. Symbolic links are resolved inside the root, through os.Root; one
//     leading outside is refused, and so is a path whose resolution lands in
//     the deny list.
//  3. The decision is made on descriptors: the path's parent is opened from
//     the root's own open directory one element at a time, following no
//     link, and every directory on the way (the last element too, when it
//     is one) is compared with the protected directories' identities
//     (device and inode), every element's name in its opened parent with
//     the protected files' places, and the last element with the protected
//     files' identities. A link found where resolution saw none means the
//     path changed meanwhile: it is resolved again, a few times at most,
//     then refused.
//
// What Locate returns (a Loc) holds its parent directory open, and every
// operation acts on the last element relative to that descriptor (open,
// create through a temporary file and rename, link, remove, make
// directories), so a directory swapped for a link while a verb runs cannot
// redirect it. Refusals are *executor.Error with code forbidden_path;
// FSError turns every other failure into an *executor.Error that names the
// workspace-relative path, never a host path.
//
// # What is protected
//
// The hub's state directory may lie inside the workspace (".hub" by
// default). Options.Protect names it (and any other such directory): its
// identity is recorded and held open when the root opens, so it cannot be
// recycled, and whether a verb may act on a path is decided by the
// identities of the directories it actually opens, never by how the path is
// spelled. A renamed state directory is still refused, and operations on a
// whole directory refuse one that holds a protected directory, found by
// walking ".." up from the protected directory's own held descriptor.
//
// The configuration file and the secret files it names (Options.
// ProtectFiles) are refused twice, neither depending on the spelling: by
// the file's identity, recorded and held open (a hard link, a symbolic link
// or a renamed parent leads to it), and by its place, the identity of the
// directory holding it and its name there (held open too), so a file
// created or renamed at that name later is refused before it exists. When
// the directory is missing, its nearest existing ancestor and the name of
// the first missing element are the place. Refresh resolves the files again
// (a reload): the new file at a place is protected by its identity too, and
// an old identity still reachable by a name stays protected.
//
// Listings (ReadDir) leave out the deny list's entries, the protected
// directories and the protected files: a place's name always, and, when a
// protected file may have another name, every file compared with the
// identities.
//
// A Protection is the set of protected directories and files. A Root
// opened with Open owns one; a session's root (OpenShared) shares its host
// root's and is checked below its own directory only.
//
// The package needs descriptor-relative calls (openat and friends, see
// internal/posix): on Windows, Open refuses to open a root rather than
// confine less.
package confine
