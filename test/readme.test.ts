import { expect, test } from "bun:test";
import { flagTable } from "../scripts/flag-table.ts";

test("the README's flag table is the one the option table generates", async () => {
  const readme = await Bun.file(`${import.meta.dir}/../README.md`).text();
  const start = readme.indexOf("-->", readme.indexOf("<!-- flags:start")) + 3;
  const end = readme.indexOf("<!-- flags:end -->");
  expect(readme.slice(start, end).trim()).toBe(flagTable().trim());
});
