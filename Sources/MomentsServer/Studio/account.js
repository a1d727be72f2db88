// The account: create one (the key shown once, with Copy and Save, kept in localStorage), use a
// key, sign out on this device (asked first); the plan and this month's quota.
import { call, key } from "./api.js";
import { $, showError } from "./dom.js";
import { setAccount } from "./limits.js";

let changed = () => {};
let state = null;

/// Tells the page when the account appears or goes (not on every refresh).
function onChange(signedIn) {
  if (signedIn === state) return;
  state = signedIn;
  changed(signedIn);
}

export function initAccount(handler) {
  changed = handler;
  $("#create-account").addEventListener("click", create);
  $("#key-form").addEventListener("submit", useKey);
  $("#sign-out").addEventListener("click", () => {
    $("#sign-out-confirm").hidden = false;
    $("#sign-out-no").focus();
  });
  $("#sign-out-no").addEventListener("click", () => {
    $("#sign-out-confirm").hidden = true;
    $("#sign-out").focus();
  });
  $("#sign-out-yes").addEventListener("click", forget);
  $("#copy-key").addEventListener("click", copyKey);
}

async function copyKey() {
  const value = $("#new-key-value").textContent;
  try {
    await navigator.clipboard.writeText(value);
    $("#copy-note").textContent = "Copied.";
  } catch {
    // No clipboard (an insecure origin, a refusal): select the key for the person to copy.
    getSelection().selectAllChildren($("#new-key-value"));
    $("#copy-note").textContent = "Selected: copy it with your keyboard or menu.";
  }
}

let keyFile = null;

function offerKeyFile(value) {
  if (keyFile) URL.revokeObjectURL(keyFile);
  keyFile = URL.createObjectURL(new Blob([`Moments key: ${value}\n`], { type: "text/plain" }));
  $("#save-key").href = keyFile;
}

/// Makes an account when there is none (a visitor pressed Make first); throws what went wrong.
export async function ensureAccount() {
  if (key.get()) return;
  const created = await call("POST", "/api/v1/accounts");
  key.set(created.api_key);
  showNewKey(created.api_key);
  await refreshAccount();
}

function showNewKey(value) {
  $("#new-key-value").textContent = value;
  $("#copy-note").textContent = "";
  offerKeyFile(value);
  $("#new-key").hidden = false;
}

async function create() {
  const button = $("#create-account");
  showError("account-error");
  button.disabled = true;
  try {
    const created = await call("POST", "/api/v1/accounts");
    key.set(created.api_key);
    showNewKey(created.api_key);
    await refreshAccount();
    // Next: the video. The key stays on screen, with its Copy and Save.
    $("#video").focus();
  } catch (error) {
    showError("account-error", error);
  } finally {
    button.disabled = false;
  }
}

async function useKey(event) {
  event.preventDefault();
  const field = $("#api-key");
  const value = field.value.trim();
  showError("account-error");
  if (!value) return showError("account-error", "Paste your key first.");
  const previous = key.get();
  key.set(value);
  try {
    await call("GET", "/api/v1/account");
    field.value = "";
    $("#new-key").hidden = true;
    await refreshAccount();
  } catch (error) {
    if (previous) key.set(previous); else key.forget();
    showError("account-error", error);
    field.focus();
  }
}

function forget() {
  key.forget();
  $("#sign-out-confirm").hidden = true;
  $("#new-key").hidden = true;
  $("#new-key-value").textContent = "";
  if (keyFile) URL.revokeObjectURL(keyFile);
  keyFile = null;
  setAccount(null);
  showSignedIn(false);
  onChange(false);
  $("#create-account").focus();
}

function showSignedIn(signedIn) {
  $("#signed-out").hidden = signedIn;
  $("#welcome").hidden = signedIn;
  $("#signed-in").hidden = !signedIn;
}

/// Shows the plan and quota for the stored key (signed out without one, or when it stopped working).
export async function refreshAccount() {
  if (!key.get()) {
    showSignedIn(false);
    onChange(false);
    return;
  }
  try {
    const account = await call("GET", "/api/v1/account");
    const usage = account.usage || {};
    setAccount(account);
    $("#plan").textContent = `Plan: ${account.plan}.`;
    // Original quality is offered where the plan has it; otherwise it says what lifts it.
    const original = $("#quality option[value=original]");
    original.disabled = !account.limits?.original;
    original.textContent = account.limits?.original ? "Original picture" : "Original picture (Pro)";
    if (original.disabled && $("#quality").value === "original") $("#quality").value = "high";
    $("#quota").textContent = usage.limit == null
      ? `${usage.used} highlights this month (no monthly limit).`
      : `${usage.used} of ${usage.limit} highlights used this month (${usage.remaining} left).`;
    showError("account-error");
    showSignedIn(true);
    onChange(true);
  } catch (error) {
    if (error.status === 401 || error.status === 403) {
      key.forget();
      showSignedIn(false);
      onChange(false);
    }
    showError("account-error", error);
  }
}
