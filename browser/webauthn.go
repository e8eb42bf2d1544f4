package browser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/jail-sandbox/jail/tools"
)

// The virtual WebAuthn authenticator (browser_webauthn_*): passkeys for the agent's own app,
// opt-in (risk exec, granted one by one). Its credentials, private keys included, live in
// the supervisor: in the browser's memory while it runs, and in a file of jail's own state
// directory beside the agent's profile (never in the profile, which the browser's container
// can write, and never in a sandbox's view). No tool result and no log carries a private key:
// the tools report a credential by its id, relying party, user and counter.

// authn is a session's authenticator.
type authn struct {
	tab   *tab
	id    webauthn.AuthenticatorID
	store string // the agent's passkeys file; "" keeps them for the browser's life only
	saved string // the last content written, to write only changes
}

// passkeysFile is the agent's passkeys file, or "" without a state directory.
func (bs *Browsers) passkeysFile(agent string) string {
	dir, err := bs.profileDir(agent)
	if err != nil || dir == "" {
		return ""
	}
	return dir + ".passkeys"
}

// loadPasskeys reads the agent's stored credentials.
func loadPasskeys(path string) ([]*webauthn.Credential, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the agent's passkeys: %w", err)
	}
	var cs []*webauthn.Credential
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("read the agent's passkeys %s: %w", path, err)
	}
	return cs, nil
}

// save writes the authenticator's credentials to the agent's file when they changed, through a
// temporary file and a rename, mode 0600.
func (a *authn) save(ctx context.Context) error {
	if a == nil || a.store == "" {
		return nil
	}
	r, err := chromedp.Call(a.tab.ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: a.id})
	if err != nil {
		return fmt.Errorf("read the authenticator's credentials: %w", err)
	}
	b, err := json.Marshal(r.Credentials)
	if err != nil {
		return err
	}
	if string(b) == a.saved {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.store), ".passkeys-*")
	if err != nil {
		return fmt.Errorf("save the agent's passkeys: %w", err)
	}
	_, werr := tmp.Write(b)
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), a.store)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save the agent's passkeys: %w", werr)
	}
	a.saved = string(b)
	return nil
}

// describeCredential is what a tool says of a credential: never its private key.
func describeCredential(c *webauthn.Credential) map[string]any {
	return map[string]any{"credential_id": base64.RawURLEncoding.EncodeToString(c.CredentialID), "rp_id": c.RpID,
		"user_handle": base64.RawURLEncoding.EncodeToString(c.UserHandle), "user_name": c.UserName,
		"sign_count": c.SignCount, "resident": c.IsResidentCredential}
}

func (bs *Browsers) webauthnTools(t func(name, desc, schema string, f func(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error)) *tools.Tool) []*tools.Tool {
	return []*tools.Tool{
		t("browser_webauthn_create", "Add a virtual passkey authenticator (CTAP2, platform, resident keys) to the current tab; the agent's stored passkeys are loaded into it. Opt-in.",
			`{"type":"object","additionalProperties":false,"properties":{"user_verified":{"type":"boolean","description":"user verification succeeds; default true"}}}`, bs.webauthnCreate),
		t("browser_webauthn_list", "List the virtual authenticator's passkeys: id, relying party, user, counter (never a private key). Opt-in.",
			`{"type":"object","additionalProperties":false,"properties":{}}`, bs.webauthnList),
		t("browser_webauthn_delete", "Delete one passkey of the virtual authenticator by its credential_id. Opt-in.",
			`{"type":"object","additionalProperties":false,"required":["credential_id"],"properties":{"credential_id":{"type":"string","minLength":1}}}`, bs.webauthnDelete),
	}
}

func (bs *Browsers) webauthnCreate(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		UserVerified *bool `json:"user_verified"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	if s.authn != nil {
		return tools.Result{}, errors.New("this browser has its authenticator already (browser_webauthn_list shows its passkeys)")
	}
	verified := a.UserVerified == nil || *a.UserVerified
	t := s.tab()
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		return tools.Result{}, fmt.Errorf("webauthn: %w", err)
	}
	r, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: verified, AutomaticPresenceSimulation: true}})
	if err != nil {
		return tools.Result{}, fmt.Errorf("webauthn: add the authenticator: %w", err)
	}
	au := &authn{tab: t, id: r.AuthenticatorID, store: bs.passkeysFile(s.agent)}
	stored, err := loadPasskeys(au.store)
	if err != nil {
		return tools.Result{}, err
	}
	for _, c := range stored {
		if _, err := chromedp.Call(ctx, webauthn.AddCredential, webauthn.AddCredentialParams{AuthenticatorID: au.id, Credential: c}); err != nil {
			return tools.Result{}, fmt.Errorf("webauthn: load a stored passkey for %s: %w", c.RpID, err)
		}
	}
	if b, err := json.Marshal(stored); err == nil && len(stored) > 0 {
		au.saved = string(b)
	}
	s.authn = au
	return tools.Result{Content: fmt.Sprintf("virtual authenticator ready (user verification %v), %d stored passkeys loaded", verified, len(stored)),
		Meta: map[string]any{"passkeys": len(stored)}}, nil
}

func (bs *Browsers) webauthnList(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	if s.authn == nil {
		return tools.Result{}, errors.New("no authenticator: browser_webauthn_create adds one")
	}
	r, err := chromedp.Call(s.authn.tab.ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: s.authn.id})
	if err != nil {
		return tools.Result{}, fmt.Errorf("webauthn: %w", err)
	}
	var b strings.Builder
	var list []any
	for _, c := range r.Credentials {
		d := describeCredential(c)
		list = append(list, d)
		fmt.Fprintf(&b, "%s rp=%s user=%q sign_count=%v resident=%v\n", d["credential_id"], c.RpID, c.UserName, c.SignCount, c.IsResidentCredential)
	}
	if len(list) == 0 {
		b.WriteString("no passkeys\n")
	}
	return tools.Result{Content: b.String(), Meta: map[string]any{"passkeys": list}}, nil
}

func (bs *Browsers) webauthnDelete(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		CredentialID string `json:"credential_id"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	if s.authn == nil {
		return tools.Result{}, errors.New("no authenticator: browser_webauthn_create adds one")
	}
	id, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(a.CredentialID, "="))
	if err != nil {
		return tools.Result{}, fmt.Errorf("credential_id %q is not base64url: %w", a.CredentialID, err)
	}
	if _, err := chromedp.Call(s.authn.tab.ctx, webauthn.RemoveCredential, webauthn.RemoveCredentialParams{AuthenticatorID: s.authn.id, CredentialID: id}); err != nil {
		return tools.Result{}, fmt.Errorf("webauthn: delete %s: %w", a.CredentialID, err)
	}
	return tools.Result{Content: "deleted passkey " + a.CredentialID}, nil
}
