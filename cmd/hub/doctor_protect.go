package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/workspaces"
)

// doctorProtected reports the configuration's protected files
// (config.Config.ProtectedFiles): each one that lies in a workspace the
// hub opens, and whether the verbs refuse it there, and each one readable
// by its group or other users. A certificate is public and may be
// readable.
func doctorProtected(r *doctorReport, cfg *config.Config) {
	files := cfg.ProtectedFiles()
	if len(files) == 0 {
		return
	}
	inside := 0
	for _, name := range cfg.WorkspaceNames() {
		wc, _ := cfg.WorkspaceByName(name)
		if wc.IsRemote() {
			continue // its node protects its own files
		}
		var held []config.ProtectedFile
		for _, f := range files {
			if liesIn(wc.Path, f.Path) {
				held = append(held, f)
			}
		}
		if len(held) == 0 {
			continue
		}
		inside += len(held)
		doctorProtectedIn(r, name, wc.Path, held)
	}
	if inside == 0 {
		r.ok("protected", fmt.Sprintf("%d %s, none inside a workspace", len(files), plural(len(files), "file", "files")))
	}
	for _, f := range files {
		if isCertificate(f.What) {
			continue
		}
		fi, err := os.Stat(f.Path)
		if err != nil || fi.Mode().Perm()&0o044 == 0 {
			continue
		}
		r.warn("protected", fmt.Sprintf("%s (%s) is readable by other users (mode %04o)", f.Path, f.What, fi.Mode().Perm()), "chmod 600 "+f.Path)
	}
}

// doctorProtectedIn opens the workspace at dir with held protected, as
// the hub does, and reports each file, or why it cannot be protected.
func doctorProtectedIn(r *doctorReport, name, dir string, held []config.ProtectedFile) {
	w, err := verbs.OpenWorkspace(dir, verbs.WorkspaceOptions{ProtectFiles: workspaces.ProtectedFiles(held)})
	if err != nil {
		r.fail("protected", fmt.Sprintf("workspace %s holds protected files that cannot be protected: %v", name, err),
			"move the files out of the workspace (and point their keys at the new place), or fix the path the error names")
		return
	}
	w.Close()
	for _, f := range held {
		how := "the verbs refuse it by identity and by place"
		if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
			how = "missing; the verbs refuse to create it"
		}
		r.ok("protected", fmt.Sprintf("%s (%s) in workspace %s: %s; proc.run programs are not confined", f.Path, f.What, name, how))
	}
}

// liesIn reports whether the path p lies inside the directory dir, both
// compared with their symbolic links resolved (as far as they exist).
func liesIn(dir, p string) bool {
	d, f := resolveExisting(dir), resolveExisting(p)
	rel, err := filepath.Rel(d, f)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting is p made absolute, with the symbolic links of its
// longest existing prefix resolved.
func resolveExisting(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if cur == filepath.Dir(cur) {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// isCertificate reports whether the key names a certificate, which is
// public.
func isCertificate(what string) bool {
	return strings.HasSuffix(what, "cert") || strings.HasSuffix(what, "cert_file") || strings.HasSuffix(what, "ca_file")
}
