package sandbox

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// challengePath is where challenges are served, followed by the id.
const challengePath = "/sandbox/3ds/"

// Errors of [Sandbox.AnswerChallenge].
var (
	ErrChallengeNotFound = errors.New("sandbox: no such 3D Secure challenge")
	ErrChallengeClosed   = errors.New("sandbox: the 3D Secure challenge was already answered or canceled")
	ErrChallengeExpired  = errors.New("sandbox: the 3D Secure challenge expired")
)

// challengeState is what the page shows, and the status it posts to the
// parent window once the challenge is over.
type challengeState string

const (
	stateOpen      challengeState = "open"
	stateSucceeded challengeState = "succeeded"
	stateFailed    challengeState = "failed"
	stateExpired   challengeState = "expired"
)

// challengeView is a challenge as the page shows it.
type challengeView struct {
	state      challengeState
	amount     string
	merchantID string
}

func (s *Sandbox) view(c *charge) challengeView {
	v := challengeView{
		state:      stateFailed,
		amount:     fmt.Sprintf("%d.%02d %s", c.res.Amount/100, c.res.Amount%100, c.res.Currency),
		merchantID: c.key.merchantID,
	}
	switch {
	case c.res.Status == provider.ChargeRequiresAction:
		v.state = stateOpen
	case c.res.Status == provider.ChargeSucceeded:
		v.state = stateSucceeded
	case c.res.Failure != nil && c.res.Failure.Code == provider.FailureAuthenticationExpired:
		v.state = stateExpired
	}
	return v
}

// AnswerChallenge answers a 3D Secure challenge as the buyer would on its
// page: complete makes the charge, otherwise it fails with
// authentication_failed. challenge is the charge's ActionURL or just the
// challenge id. The notifier is called as after an answer on the page.
func (s *Sandbox) AnswerChallenge(ctx context.Context, challenge string, complete bool) error {
	_, err := s.answer(ctx, challenge[strings.LastIndexByte(challenge, '/')+1:], complete)
	return err
}

// answer records the buyer's answer, then calls the notifier before it
// returns, as a provider's webhook that arrives while the buyer's page
// loads: a read of the intent after the page answered sees the outcome.
// The notifier runs outside the sandbox's mutex, since it looks the
// attempt up in the sandbox.
func (s *Sandbox) answer(ctx context.Context, id string, complete bool) (challengeView, error) {
	v, key, notify, err := s.record(id, complete)
	if err == nil && notify != nil {
		notify(context.WithoutCancel(ctx), key.merchantID, key.attemptID)
	}
	return v, err
}

// record is answer's change of the challenge, under the mutex; it returns
// the notifier to call for the charge's attempt once it committed.
func (s *Sandbox) record(id string, complete bool) (challengeView, attempt, provider.NotifyFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v challengeView
	var c *charge
	var refused error // why the answer is refused; the expiry it found is kept
	err := s.inTx(func(t tx) (err error) {
		if c, err = t.chargeByChallenge(id); err != nil {
			return err
		}
		if c == nil {
			refused = ErrChallengeNotFound
			return nil
		}
		settled := s.settleCharge(c, s.clock.Now())
		switch v = s.view(c); v.state {
		case stateExpired:
			refused = ErrChallengeExpired
		case stateSucceeded, stateFailed:
			refused = ErrChallengeClosed
		default:
			if complete {
				s.succeed(c)
			} else {
				c.fail(provider.FailureAuthenticationFailed, "", "3D Secure was not completed.")
			}
			v, settled = s.view(c), true
		}
		if !settled {
			return nil
		}
		return t.saveCharge(c)
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return v, attempt{}, nil, err
	}
	return v, c.key, s.notify, nil
}

// ChallengeHandler serves the 3D Secure page of every challenge at
// GET /sandbox/3ds/{id}, and takes the answer, a form with result=complete or
// result=fail, at POST /sandbox/3ds/{id}. An answer to a challenge that is
// already answered or expired is refused with 409 Conflict and a page that
// says why. Mount it at "/sandbox/3ds/" of the server at the base URL.
//
// Once a challenge is over, its page posts {type: "keelpay:3ds", status}
// (status "succeeded", "failed" or "expired") to the parent window when it is
// shown in a frame. The message is a hint for the browser script to look the
// payment up; the outcome itself comes only from the service.
func (s *Sandbox) ChallengeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+challengePath+"{id}", s.serveChallenge)
	mux.HandleFunc("POST "+challengePath+"{id}", s.serveAnswer)
	return mux
}

func (s *Sandbox) serveChallenge(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var c *charge
	err := s.inTx(func(t tx) (err error) {
		if c, err = t.chargeByChallenge(r.PathValue("id")); err != nil || c == nil {
			return err
		}
		if !s.settleCharge(c, s.clock.Now()) {
			return nil
		}
		return t.saveCharge(c)
	})
	var v challengeView
	if c != nil {
		v = s.view(c)
	}
	s.mu.Unlock()
	switch {
	case err != nil:
		renderPage(w, http.StatusServiceUnavailable, page{Heading: "Something went wrong", Text: "The sandbox could not read the challenge. Try again."})
	case c == nil:
		renderPage(w, http.StatusNotFound, challengeNotFoundPage())
	default:
		renderPage(w, http.StatusOK, v.page(""))
	}
}

func (s *Sandbox) serveAnswer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	var complete bool
	switch err := r.ParseForm(); {
	case err != nil:
		renderPage(w, http.StatusBadRequest, page{Heading: "Something went wrong", Text: "The answer could not be read. Go back and try again."})
		return
	case r.PostForm.Get("result") == "complete":
		complete = true
	case r.PostForm.Get("result") != "fail":
		renderPage(w, http.StatusBadRequest, page{Heading: "Something went wrong", Text: "Choose Complete or Fail."})
		return
	}
	v, err := s.answer(r.Context(), r.PathValue("id"), complete)
	switch {
	case errors.Is(err, ErrChallengeNotFound):
		renderPage(w, http.StatusNotFound, challengeNotFoundPage())
	case errors.Is(err, ErrChallengeExpired):
		renderPage(w, http.StatusConflict, v.page("This challenge expired before it was answered, so it can no longer be answered."))
	case errors.Is(err, ErrChallengeClosed):
		renderPage(w, http.StatusConflict, v.page("This challenge was already answered; the first answer stands."))
	case err != nil:
		renderPage(w, http.StatusServiceUnavailable, page{Heading: "Something went wrong", Text: "The sandbox could not take the answer. Try again."})
	default:
		renderPage(w, http.StatusOK, v.page(""))
	}
}

// page is what pageTemplate shows.
type page struct {
	Heading  string
	Text     string
	Notice   string
	Amount   string
	Merchant string
	// Open shows the Complete and Fail buttons.
	Open bool
	// Status, when set, is posted to the parent window.
	Status string
	Nonce  string
}

func challengeNotFoundPage() page {
	return page{Heading: "Challenge not found", Text: "This 3D Secure challenge does not exist."}
}

func (v challengeView) page(notice string) page {
	p := page{Notice: notice, Amount: v.amount, Merchant: v.merchantID, Status: string(v.state)}
	switch v.state {
	case stateOpen:
		p.Heading, p.Text, p.Open, p.Status = "Confirm this payment", "Choose how the buyer answers the 3D Secure challenge.", true, ""
	case stateSucceeded:
		p.Heading, p.Text = "Authentication completed", "The payment was authenticated. You can close this page."
	case stateFailed:
		p.Heading, p.Text = "Authentication failed", "The payment was not authenticated. You can close this page."
	case stateExpired:
		p.Heading, p.Text = "Authentication expired", "The challenge was not answered within 10 minutes, so the payment was not authenticated."
	}
	return p
}

// renderPage writes p with a fresh nonce. The Content-Security-Policy allows
// nothing but the page's own nonce-tagged style and script and posting the
// form to itself. It sets no frame-ancestors: the page is shown in the
// store's checkout frame, whose origins the service knows and the provider
// does not, as with a bank's real 3D Secure page.
func renderPage(w http.ResponseWriter, status int, p page) {
	p.Nonce = keelpay.NewID("")
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", fmt.Sprintf(
		"default-src 'none'; style-src 'nonce-%[1]s'; script-src 'nonce-%[1]s'; form-action 'self'; base-uri 'none'", p.Nonce))
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, p) // only a write to the client can fail
}

// The script posts to the target origin "*" because the page cannot know
// which origin frames it, and the message carries nothing but the outcome's
// status: no ids, amounts or card data. The receiver checks that event.origin
// is the 3D Secure page's and asks the service for the outcome.
var pageTemplate = template.Must(template.New("3ds").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sandbox 3D Secure</title>
<style nonce="{{.Nonce}}">
body { font-family: system-ui, sans-serif; margin: 0; padding: 24px; color: #1b1f24; background: #f5f6f8; }
main { max-width: 420px; margin: 0 auto; padding: 24px; background: #fff; border: 1px solid #d8dde3; border-radius: 8px; }
h1 { font-size: 20px; margin: 0 0 12px; }
.sandbox { font-size: 13px; color: #5a6470; margin: 0 0 16px; }
.notice { padding: 10px 12px; background: #fff4e5; border: 1px solid #f0c36d; border-radius: 6px; }
dl { display: grid; grid-template-columns: auto 1fr; gap: 4px 16px; margin: 0 0 16px; }
dt { color: #5a6470; }
dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; min-width: 0; }
form { display: flex; gap: 12px; margin-top: 20px; }
button { flex: 1; padding: 10px; font-size: 16px; border-radius: 6px; cursor: pointer; }
.complete { color: #fff; background: #1a7f37; border: 1px solid #1a7f37; }
.fail { color: #b42318; background: #fff; border: 1px solid #b42318; }
</style>
</head>
<body>
<main>
<p class="sandbox">keelpay sandbox: no bank is involved and no money moves.</p>
<h1>{{.Heading}}</h1>
{{if .Notice}}<p class="notice" role="alert">{{.Notice}}</p>{{end}}
{{if .Amount}}<dl><dt>Amount</dt><dd>{{.Amount}}</dd><dt>Merchant</dt><dd>{{.Merchant}}</dd></dl>{{end}}
<p>{{.Text}}</p>
{{if .Open}}<form method="post">
<button class="complete" type="submit" name="result" value="complete">Complete</button>
<button class="fail" type="submit" name="result" value="fail">Fail</button>
</form>{{end}}
</main>
{{if .Status}}<script nonce="{{.Nonce}}">
if (window.parent !== window) {
  window.parent.postMessage({type: "keelpay:3ds", status: {{.Status}}}, "*");
}
</script>{{end}}
</body>
</html>
`))
