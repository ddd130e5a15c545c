package telegram

import (
	"encoding/json"
	"fmt"
	"sync"
)

// cursorStore is the part of hub.Ledger the adapter keeps its state in.
type cursorStore interface {
	Cursor(name string) (string, error)
	SetCursor(name, value string) error
}

// migrationsCursor names the ledger cursor holding the migration map.
const migrationsCursor = "telegram.migrations"

// maxMigrationHops bounds the chain old → … → new that resolve follows.
const maxMigrationHops = 8

// migrations maps the chat ids of groups that became supergroups to their
// new ids, so that chunks queued for the old chat go to the new one. The map
// is kept in hub.db (a ledger cursor) when a store is given.
type migrations struct {
	store cursorStore // nil: memory only

	mu sync.Mutex
	m  map[string]string
}

func loadMigrations(st cursorStore) (*migrations, error) {
	mg := &migrations{store: st, m: map[string]string{}}
	if st == nil {
		return mg, nil
	}
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
	if mg.store == nil {
		return true, nil
	}
	data, _ := json.Marshal(mg.m)
	if err := mg.store.SetCursor(migrationsCursor, string(data)); err != nil {
		return true, fmt.Errorf("telegram: save migrated chat %s → %s: %w", from, to, err)
	}
	return true, nil
}
