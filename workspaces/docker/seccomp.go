package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// seccompProfile is the containers' seccomp profile, built once; "" keeps
// the daemon's default.
var seccompProfile = sync.OnceValues(profile)

// profileHash names the profile in the settings hash, so containers made
// under another one are replaced.
func profileHash() string {
	p, err := seccompProfile()
	if err != nil || p == "" {
		return "default"
	}
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:8])
}
