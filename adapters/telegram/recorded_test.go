package telegram

import (
	"testing"

	"github.com/a6afc2ce/hermes-hub/outbox"
)

// TestSenderIsNotRecorded: a chunk sent to the platform is out of the
// process, so the outbox keeps one chunk in flight per target (it must not
// take the batch path of an outbox.RecordedSender).
func TestSenderIsNotRecorded(t *testing.T) {
	var s outbox.Sender = (*Sender)(nil)
	if _, ok := s.(outbox.RecordedSender); ok {
		t.Fatal("the telegram sender is an outbox.RecordedSender")
	}
}
