package outbox

import (
	"context"
	"fmt"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// TargetBook is the delivery-target bookkeeping FanOut needs (store.Targets
// satisfies it): which targets a turn still has to reach, and recording that
// it reached them.
type TargetBook interface {
	// PendingFor returns the targets whose last delivery is not turnID.
	PendingFor(turnID string) []chat.Key
	// RecordDelivery records turnID as the last delivery of each key.
	RecordDelivery(turnID string, keys []chat.Key) error
}

// FanOut sends text to every delivery target that has not had turnID yet: it
// splits the text for each target (opts chooses the chunking per target; nil
// means chat.ChunkOptionsFor the target's platform), enqueues the pma:
// entries of all targets in one transaction, and only then records the
// delivery in book. A crash between the two enqueues again on the next
// attempt, which the ids make a no-op. It returns the ids enqueued.
func FanOut(ctx context.Context, ob *Outbox, book TargetBook, turnID, text string, opts func(chat.Key) chat.ChunkOptions) ([]string, error) {
	if ob == nil || book == nil {
		return nil, fmt.Errorf("fan out %s: nil outbox or target book", turnID)
	}
	if err := validTurnID(turnID); err != nil {
		return nil, fmt.Errorf("fan out: %w", err)
	}
	if opts == nil {
		opts = defaultChunkOptions
	}
	keys := book.PendingFor(turnID)
	if len(keys) == 0 {
		return nil, nil
	}
	var entries []Entry
	for _, k := range keys {
		entries = append(entries, NewEntries(KindPMA, turnID, k, chat.SplitText(text, opts(k)), nil)...)
	}
	added, err := ob.Enqueue(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("fan out %s: %w", turnID, err)
	}
	if err := book.RecordDelivery(turnID, keys); err != nil {
		return added, fmt.Errorf("fan out %s: chunks enqueued, but recording the delivery failed: %w", turnID, err)
	}
	return added, nil
}

// defaultChunkOptions chunks for a chat target's platform; web and local
// targets are not limited.
func defaultChunkOptions(k chat.Key) chat.ChunkOptions {
	switch k.Kind {
	case chat.KindChat:
		return chat.ChunkOptionsFor(k.Platform)
	default:
		return chat.ChunkOptionsFor(chat.Web)
	}
}
