// derive cases (being written).
export default [];
