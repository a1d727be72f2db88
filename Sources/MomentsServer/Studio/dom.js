// Small DOM helpers shared by the studio's modules.
export const $ = (selector) => document.querySelector(selector);

/// Shows an error's words in the element next to the control that caused it (empty clears it).
export function showError(id, error) {
  const element = document.getElementById(id);
  if (!element) return;
  const text = error == null ? "" : typeof error === "string" ? error : error.message;
  element.textContent = text;
  element.hidden = !text;
}

/// An element with text (never HTML).
export function el(tag, text, className) {
  const element = document.createElement(tag);
  if (text != null) element.textContent = text;
  if (className) element.className = className;
  return element;
}

export function seconds(value) {
  const total = Math.max(0, value);
  const m = Math.floor(total / 60);
  const s = total - m * 60;
  return `${m}:${s.toFixed(1).padStart(4, "0")}`;
}
