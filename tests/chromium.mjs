// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, one
// way for every suite and bench that needs a browser.
//
// Chromium writes its profile and, under $TMPDIR, a scoped directory per run
// that it does not always remove; both go into one temporary directory that
// `close()` removes, so repeated runs leave nothing behind in /tmp.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CHROMIUM = "/usr/bin/chromium";

const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * A persistent context in a fresh profile (`options` go to
 * `launchPersistentContext`, e.g. `viewport`); its `close()` also removes the
 * profile and Chromium's temporary files.
 */
export async function openChromium(options = {}) {
  const { chromium } = await import("playwright-core");
  const dir = mkdtempSync(join(tmpdir(), "edge-deadline-chromium-"));
  const profile = join(dir, "profile");
  const tmp = join(dir, "tmp");
  const home = join(dir, "home");
  for (const d of [profile, tmp, home]) mkdirSync(d);
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), XDG_CACHE_HOME: join(home, ".cache"), XDG_DATA_HOME: join(home, ".local/share"), TMPDIR: tmp },
      ...options,
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const close = context.close.bind(context);
  context.close = async () => {
    try {
      await close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  return context;
}
