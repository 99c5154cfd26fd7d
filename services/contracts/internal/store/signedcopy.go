package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// PutExecutedFile stores the signed copy in one transaction: the contract
// row is locked, any existing copy is deleted, apply checks and changes the
// contract knowing whether a copy was replaced, the bytes are copied in
// ChunkSize pieces from f.Data (a local spool file), and the contract is
// saved. Whether a copy exists comes from the DELETE, a statement run after
// the lock was granted, not from the locking SELECT's join: when that
// SELECT waited for a concurrent upload, PostgreSQL re-reads the locked
// contract row but not the joined executed_files row, so c.ExecutedFile
// can miss the copy that upload just committed. An error from apply rolls
// the DELETE back. The events are signedEvents': contract.status_changed
// when the status moved, then contract.executed.
func (s *Store) PutExecutedFile(ctx context.Context, id int64, f contracts.NewExecutedFile, apply func(c *contracts.Contract, replacing bool) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(tx pgx.Tx, c *contracts.Contract) error {
		tag, err := tx.Exec(ctx, `DELETE FROM executed_files WHERE contract_id = $1`, id)
		if err != nil {
			return fmt.Errorf("replace signed copy: %w", err)
		}
		if err := apply(c, tag.RowsAffected() > 0); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO executed_files (contract_id, filename, size, sha256, uploaded_by)
			VALUES ($1, $2, $3, $4, $5)`, id, f.Filename, f.Size, f.SHA256, f.UploadedBy); err != nil {
			return fmt.Errorf("store signed copy: %w", err)
		}
		buf := make([]byte, ChunkSize)
		for seq := 0; ; seq++ {
			n, rerr := io.ReadFull(f.Data, buf)
			if n > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO executed_file_chunks (contract_id, seq, data) VALUES ($1, $2, $3)`,
					id, seq, buf[:n]); err != nil {
					return fmt.Errorf("store signed copy chunk: %w", err)
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("read signed copy: %w", rerr)
			}
		}
		return nil
	}, signedEvents)
}

// StreamExecutedFile writes the signed copy chunk by chunk in a
// repeatable-read snapshot, so a concurrent replacement cannot mix two
// files; memory stays at one chunk. A missing contract is not_found
// "contract", a contract without a copy not_found "signed copy".
func (s *Store) StreamExecutedFile(ctx context.Context, id int64, start func(contracts.ExecutedFile) (io.Writer, error)) error {
	return pgx.BeginTxFunc(ctx, s.db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var fname, fsha *string
		var fsize *int64
		var fat *time.Time
		err := tx.QueryRow(ctx, `SELECT f.filename, f.size, f.sha256, f.uploaded_at
			FROM contracts c LEFT JOIN executed_files f ON f.contract_id = c.id WHERE c.id = $1`, id).
			Scan(&fname, &fsize, &fsha, &fat)
		if db.IsNoRows(err) {
			return fault.NotFound("contract")
		}
		if err != nil {
			return fmt.Errorf("signed copy: %w", err)
		}
		if fname == nil {
			return fault.NotFound("signed copy")
		}
		w, err := start(contracts.ExecutedFile{Filename: *fname, Size: *fsize, SHA256: *fsha, UploadedAt: timestamp.Of(*fat)})
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT data FROM executed_file_chunks WHERE contract_id = $1 ORDER BY seq`, id)
		if err != nil {
			return fmt.Errorf("signed copy chunks: %w", err)
		}
		defer rows.Close()
		var chunk []byte
		for rows.Next() {
			if err := rows.Scan(&chunk); err != nil {
				return fmt.Errorf("signed copy chunk: %w", err)
			}
			if _, err := w.Write(chunk); err != nil {
				return fmt.Errorf("write signed copy: %w", err)
			}
		}
		return rows.Err()
	})
}

// DeleteExecutedFile removes the signed copy (404 when there is none) with
// changeEvents' events: contract.status_changed when apply moved the
// status, and contract.updated, since executed_file changed.
func (s *Store) DeleteExecutedFile(ctx context.Context, id int64, apply func(*contracts.Contract) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(tx pgx.Tx, c *contracts.Contract) error {
		tag, err := tx.Exec(ctx, `DELETE FROM executed_files WHERE contract_id = $1`, id)
		if err != nil {
			return fmt.Errorf("delete signed copy: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("signed copy")
		}
		return apply(c)
	}, changeEvents)
}
