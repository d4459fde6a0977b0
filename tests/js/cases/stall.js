// stall cases (being written).
export default [];
