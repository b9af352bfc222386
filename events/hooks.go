package events

import (
	"context"

	"github.com/keelpay/keelpay/internal/eventshook"
)

// hooks are what keelpay itself may set on a Dispatcher, through package
// internal/eventshook, before it runs: the public type offers neither.
type hooks struct {
	// interceptor sees each attempt first (the sandbox's delivery
	// faults); nil for a production dispatcher.
	interceptor eventshook.Interceptor
	// drive, when not nil, puts the loop in manual mode: it claims only
	// when a request comes on drive, and answers it once everything it
	// then claimed is attempted and recorded.
	drive chan driveRequest
}

// driveRequest asks a manual loop for one round of deliveries; reply gets
// the number of attempts made.
type driveRequest struct {
	reply chan int
}

func init() {
	eventshook.Installed = eventshook.Funcs{
		SetInterceptor: func(d eventshook.Dispatcher, i eventshook.Interceptor) {
			d.(*Dispatcher).hooks.interceptor = i
		},
		Manual: func(d eventshook.Dispatcher) {
			d.(*Dispatcher).hooks.drive = make(chan driveRequest)
		},
		Deliver: func(ctx context.Context, d eventshook.Dispatcher) (int, error) {
			drive := d.(*Dispatcher).hooks.drive
			if drive == nil {
				panic("eventshook.Deliver: the dispatcher is not in manual mode (eventshook.Manual)")
			}
			req := driveRequest{reply: make(chan int, 1)}
			select {
			case drive <- req:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			select {
			case n := <-req.reply:
				return n, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		},
	}
}
