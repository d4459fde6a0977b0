// tests/js/conformance-table.js for workerd (tests/run.mjs embeds this file under
// that module's name): the table as workerd's JSON module, with no import
// attribute, which workerd refuses at some compatibility dates.
import table from "../conformance/cases.json";

export default table;
