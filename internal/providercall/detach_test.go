package providercall

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDetachAnswersInTime(t *testing.T) {
	t.Parallel()
	v, err, answered := Detach(nil, time.Hour, func(claim func() bool) (int, error) {
		require.True(t, claim())
		return 7, errors.New("e")
	}, nil)
	require.True(t, answered)
	require.Equal(t, 7, v)
	require.EqualError(t, err, "e")
}

func TestDetachGivesUpAndWorkGoesOn(t *testing.T) {
	t.Parallel()
	release, claimed := make(chan struct{}), make(chan bool, 1)
	var runs Runs
	committed := false
	v, err, answered := Detach(&runs, 10*time.Millisecond, func(claim func() bool) (int, error) {
		<-release
		claimed <- claim()
		committed = true
		return 7, nil
	}, nil)
	require.False(t, answered)
	require.Zero(t, v)
	require.NoError(t, err)

	// The work outlives the answer: a shutdown waits for it.
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, runs.Wait(short), context.DeadlineExceeded, "the work still runs")
	close(release)
	require.NoError(t, runs.Wait(context.Background()))
	require.True(t, committed, "Wait returns after the work ended")
	require.False(t, <-claimed, "the caller gave up: work commits without it")
	require.NoError(t, runs.Wait(context.Background()), "nothing runs: Wait returns at once")
}

func TestDetachAnswersWithWorkThatClaimed(t *testing.T) {
	t.Parallel()
	// Whichever comes first, the deadline or the claim: the caller gets
	// work's result exactly when work committed for it.
	for range 50 {
		got := make(chan bool, 1)
		v, _, answered := Detach(nil, time.Microsecond, func(claim func() bool) (int, error) {
			c := claim()
			got <- c
			return 7, nil
		}, nil)
		c := <-got
		require.Equal(t, c, answered)
		if answered {
			require.Equal(t, 7, v)
		}
	}
}

func TestDetachPanicsInTheCallerThatWaits(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "boom", func() {
		Detach(nil, time.Hour, func(func() bool) (int, error) { panic("boom") }, nil)
	})
}

func TestDetachHandsALostPanicToLost(t *testing.T) {
	t.Parallel()
	release, lost := make(chan struct{}), make(chan any, 1)
	_, _, answered := Detach(nil, time.Millisecond, func(claim func() bool) (int, error) {
		<-release
		panic("boom")
	}, func(v any) { lost <- v })
	require.False(t, answered)
	close(release)
	require.Equal(t, "boom", <-lost)
}
