package telegram

import (
	"encoding/json"
	"fmt"
	"sync"
)

// memoryCursors keeps cursors for an adapter given no store: they last as
// long as the adapter.
type memoryCursors struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *memoryCursors) Cursor(name string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name], nil
}

func (c *memoryCursors) SetCursor(name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	c.m[name] = value
	return nil
}

// migrationsCursor names the cursor holding the migration map.
const migrationsCursor = "migrations"

// maxMigrationHops bounds the chain old → … → new that resolve follows.
const maxMigrationHops = 8

// migrations maps the chat ids of groups that became supergroups to their
// new ids, so that chunks queued for the old chat go to the new one. The map
// is kept in the adapter's cursor store.
type migrations struct {
	store Cursors

	mu sync.Mutex
	m  map[string]string
}

func loadMigrations(st Cursors) (*migrations, error) {
	mg := &migrations{store: st, m: map[string]string{}}
	v, err := st.Cursor(migrationsCursor)
	if err != nil {
		return nil, fmt.Errorf("telegram: read migrated chats: %w", err)
	}
	if v != "" {
		if err := json.Unmarshal([]byte(v), &mg.m); err != nil {
			return nil, fmt.Errorf("telegram: read migrated chats: cursor %s is not a JSON object of chat ids: %w", migrationsCursor, err)
		}
	}
	return mg, nil
}

// resolve returns the chat id messages for chatID go to now.
func (mg *migrations) resolve(chatID string) string {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	for range maxMigrationHops {
		to, ok := mg.m[chatID]
		if !ok {
			break
		}
		chatID = to
	}
	return chatID
}

// record remembers that from became to. It reports whether this was news.
func (mg *migrations) record(from, to string) (bool, error) {
	if from == "" || to == "" || from == to {
		return false, nil
	}
	mg.mu.Lock()
	defer mg.mu.Unlock()
	if mg.m[from] == to {
		return false, nil
	}
	mg.m[from] = to
	data, _ := json.Marshal(mg.m)
	if err := mg.store.SetCursor(migrationsCursor, string(data)); err != nil {
		return true, fmt.Errorf("telegram: save migrated chat %s → %s: %w", from, to, err)
	}
	return true, nil
}
