// What a refusal means for a person, in their words: dates in their locale, the plan by name, no
// methods, paths or product ids. Codes not listed keep the server's own sentence (already written
// for users); these are the ones whose sentence speaks to a developer.
const PLANS = { free: "the free plan", pro: "Moments Pro" };

function day(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date.toLocaleDateString(undefined, { day: "numeric", month: "long" });
}

/// A sentence for `problem` (status `status`), or null to keep the server's.
export function plainWords(status, code, problem) {
  switch (code) {
    case "quota_exceeded": {
      const when = day(problem.resets_at);
      const limit = Number.isInteger(problem.limit) ? `all ${problem.limit} highlights` : "every highlight";
      return `You have used ${limit} of this month on ${PLANS[problem.plan] || "your plan"}.` +
        `${when ? ` More on ${when},` : ""} or upgrade to Moments Pro for more.`;
    }
    case "too_many_jobs":
      return problem.uploading > 0
        ? "An earlier upload that stopped is still holding your place. Resume it, or wait a little and try again."
        : "A highlight is already being made. Wait for it to finish, or cancel it under Your highlights.";
    case "quality_not_in_plan":
      return "Original picture comes with Moments Pro. Choose Standard, or upgrade.";
    case "daily_budget_exceeded":
      return "You have made as many highlights as a day allows. Try again tomorrow.";
    case "server_busy":
    case "storage_unavailable":
    case "processing_unavailable":
      return "Moments is busy right now. Try again in a few minutes; nothing was charged.";
    default:
      // 401 is a key the server does not know; a 403 (a disabled account, say) keeps its own sentence.
      return status === 401 ? "This key is not valid. Check it, or create a new account." : null;
  }
}
