package app

import (
	"context"
	"fmt"

	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/store"
)

// newKnowledge builds the knowledge service over the stored knowledge bases
// and publishes search_knowledge into slot when any is enabled.
func newKnowledge(ctx context.Context, db *store.DB, slot knowledge.Slot, opts Options) (*knowledge.KnowledgeService, error) {
	svc := knowledge.NewService(db, db, opts.Log)
	if err := svc.Publish(ctx, slot); err != nil {
		return nil, fmt.Errorf("app: knowledge: %w", err)
	}
	return svc, nil
}
