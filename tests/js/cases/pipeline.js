// pipeline cases (being written).
export default [];
