// Command intentlists measures the filtered pages of GET
// /v1/payment_intents at scale: it fills a fresh SQLite database with N
// payment intents of one store and times a page of each filter the
// support desk uses, through the storage adapter (the query the API
// runs, without HTTP).
//
//	go run ./bench/intentlists -db /tmp/il/keelpay.db -n 1000000
//
// The intents are written through the adapter (PaymentIntentInsert, in
// transactions of -batch intents), so each row, its sealed personal data
// and every index are as the service leaves them. The mix: 10,000
// customers, a unique reference per intent, one intent a second; 70%
// succeeded, 20% requires_payment_method, 5% canceled, 5% processing.
//
// It prints the fill time and, for each page, the median and 99th
// percentile of -runs reads.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

func main() {
	path := flag.String("db", "", "the SQLite file to create (must not exist)")
	n := flag.Int("n", 1_000_000, "payment intents to insert")
	batch := flag.Int("batch", 20_000, "intents per transaction")
	runs := flag.Int("runs", 200, "reads of each page")
	flag.Parse()
	if *path == "" {
		log.Fatal("-db is required")
	}
	if _, err := os.Stat(*path); err == nil {
		log.Fatalf("%s exists: give a fresh path", *path)
	}
	if err := os.MkdirAll(filepath.Dir(*path), 0o755); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: *path})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(t0)
	if err := db.StoreInsert(ctx, st); err != nil {
		log.Fatal(err)
	}

	status := func(i int) keelpay.PaymentIntentStatus {
		switch i % 20 {
		case 0, 1, 2, 3:
			return keelpay.IntentRequiresPaymentMethod
		case 4:
			return keelpay.IntentCanceled
		case 5:
			return keelpay.IntentProcessing
		}
		return keelpay.IntentSucceeded
	}
	start := time.Now()
	for lo := 0; lo < *n; lo += *batch {
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			for i := lo; i < min(lo+*batch, *n); i++ {
				pi := storagetest.NewIntentRecord(st.ID, t0.Add(time.Duration(i)*time.Second))
				pi.Customer.ID = fmt.Sprintf("cus_%05d", i%10_000)
				pi.Reference = fmt.Sprintf("order-%07d", i)
				pi.Status = status(i)
				if err := tx.PaymentIntentInsert(ctx, pi); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	fill := time.Since(start)
	fmt.Printf("filled %d intents in %.1f s (%.0f intents/s)\n", *n, fill.Seconds(), float64(*n)/fill.Seconds())

	mid := *n / 2
	midAt := t0.Add(time.Duration(mid) * time.Second)
	// A cursor deep in the list: the intent in the middle.
	deep, _, err := db.PaymentIntentList(ctx, storage.PaymentIntentListParams{
		StoreID: st.ID, Limit: 1, CreatedLT: midAt.Add(time.Second)})
	if err != nil || len(deep) != 1 {
		log.Fatalf("middle intent: %v", err)
	}
	pages := []struct {
		name string
		p    storage.PaymentIntentListParams
	}{
		{"no filter, first page", storage.PaymentIntentListParams{}},
		{"customer", storage.PaymentIntentListParams{CustomerID: "cus_04242"}},
		{"customer+reference", storage.PaymentIntentListParams{CustomerID: fmt.Sprintf("cus_%05d", mid%10_000), Reference: fmt.Sprintf("order-%07d", mid)}},
		{"reference", storage.PaymentIntentListParams{Reference: fmt.Sprintf("order-%07d", mid)}},
		{"status=canceled", storage.PaymentIntentListParams{Status: keelpay.IntentCanceled}},
		{"status=canceled+created 1 day in the middle", storage.PaymentIntentListParams{Status: keelpay.IntentCanceled,
			CreatedGTE: midAt.Add(-12 * time.Hour), CreatedLT: midAt.Add(12 * time.Hour)}},
		{"status=processing+created[gte] middle, starting_after middle", storage.PaymentIntentListParams{Status: keelpay.IntentProcessing,
			CreatedGTE: midAt.Add(-12 * time.Hour), StartingAfter: deep[0].ID}},
		{"customer+created range, ending_before middle", storage.PaymentIntentListParams{CustomerID: "cus_04242",
			CreatedGTE: midAt.Add(-72 * time.Hour), CreatedLT: midAt.Add(72 * time.Hour), EndingBefore: deep[0].ID}},
	}
	for _, pg := range pages {
		p := pg.p
		p.StoreID, p.Limit = st.ID, 10
		times := make([]time.Duration, 0, *runs)
		var got int
		for range *runs {
			t := time.Now()
			list, _, err := db.PaymentIntentList(ctx, p)
			times = append(times, time.Since(t))
			if err != nil {
				log.Fatalf("%s: %v", pg.name, err)
			}
			got = len(list)
		}
		slices.Sort(times)
		fmt.Printf("%-62s %2d intents  median %8s  p99 %8s\n", pg.name, got,
			times[len(times)/2].Round(time.Microsecond), times[len(times)*99/100].Round(time.Microsecond))
	}
}
